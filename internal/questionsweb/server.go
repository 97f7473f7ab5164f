// Package questionsweb serves a small web page on which a person answers the question sets waiting
// in a questions.Store, from any device that can reach it: the open sets are listed live (server-sent
// events), each question's options as radio buttons or checkboxes plus free text, with a way to
// reject the set with a reason. It renders whatever set the store holds, so approvals put there by
// the ACP backend show up too.
//
// Access needs a secret token, carried by the link the server prints. A browser trades it, once per
// visit of the link, for a session cookie named after the server's port whose value is a random
// session of its own (see sessions), then is redirected to the address without the token: browsers
// send a host's cookies to every port of it, so the cookie must not be the token. A script sends the
// token itself (Authorization: Bearer). State-changing requests also need the form value of their
// session (the token, for a script) in the form or the X-Qkit-Token header, and are refused when a
// browser says they come from another site (Sec-Fetch-Site, Origin). On a loopback address,
// requests naming another host are refused (DNS rebinding). Answers go through the store, so the
// first answer wins whichever way it came.
package questionsweb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
)

// Options configure a Server.
type Options struct {
	// Token is the secret the link carries; empty: a new random one.
	Token string
	// Logger receives request failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock for ages shown on the page.
	Now func() time.Time
	// Heartbeat is how often an idle event stream gets a comment line, so proxies keep it open; 0
	// means 25 seconds.
	Heartbeat time.Duration
}

// Server is the page over one store. Create it with New, start it with Serve.
type Server struct {
	st        questions.Store
	token     string
	log       *slog.Logger
	now       func() time.Time
	heartbeat time.Duration
	feed      *feed
	sessions  *sessions
	loopback  bool
	cookie    string
	handler   http.Handler
}

// New returns a server over st.
func New(st questions.Store, opts Options) (*Server, error) {
	s := &Server{st: st, token: opts.Token, log: opts.Logger, now: opts.Now, heartbeat: opts.Heartbeat}
	if s.token == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s.token = hex.EncodeToString(b)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 25 * time.Second
	}
	s.feed = newFeed(st, s.log)
	s.sessions = newSessions()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /app.js", asset("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", asset("app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("POST /sets/{id}/answer", s.answer)
	mux.HandleFunc("POST /sets/{id}/reject", s.reject)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("refused a cross-site request", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "secFetchSite", r.Header.Get("Sec-Fetch-Site"))
		s.reply(w, r, http.StatusForbidden, "Refused: this request came from another site. Answer on the page qkit questions serve printed.")
	}))
	s.handler = s.guard(cop.Handler(mux))
	return s, nil
}

// Token is the secret the link carries.
func (s *Server) Token() string { return s.token }

// Handler is the page's HTTP handler (for tests; Serve uses it).
func (s *Server) Handler() http.Handler { return s.handler }

// URL is the link to print for a listener: the page with the token.
func (s *Server) URL(addr net.Addr) string {
	return s.BaseURL(addr) + "?token=" + url.QueryEscape(s.token)
}

// BaseURL is the page's address without the token (safe to show to an assistant).
func (s *Server) BaseURL(addr net.Addr) string {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	return "http://" + host + "/"
}

// Serve serves the page on ln until ctx ends, then stops: open pages are told the server stopped,
// and requests in flight get a moment to finish. stateDir, when not empty, records the running page
// (without its token) so the MCP tool can point the person to it.
func (s *Server) Serve(ctx context.Context, ln net.Listener, stateDir string) error {
	addr, _ := ln.Addr().(*net.TCPAddr)
	s.loopback = addr != nil && addr.IP.IsLoopback()
	port := 0
	if addr != nil {
		port = addr.Port
	}
	s.cookie = fmt.Sprintf("qkit_questions_%d", port)
	if stateDir != "" {
		remove, err := questions.AnnouncePage(stateDir, questions.RunningPage{URL: s.BaseURL(ln.Addr()), Process: questions.Self()})
		if err != nil {
			s.log.Warn("could not record the running page", "error", err)
		} else {
			defer remove()
		}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.feed.start(ctx); err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Event streams end with ctx (BaseContext); then the rest drains.
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shut)
	s.feed.wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// guard sets the headers every response carries and refuses, on a loopback address, a Host that is
// not a loopback name (a page on another site reaching this one through DNS rebinding).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if s.loopback && !loopbackHost(r.Host) {
			s.reply(w, r, http.StatusMisdirectedRequest, "Refused: this page answers only on its loopback address.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// same compares a presented secret with the token in constant time.
func (s *Server) same(got string) bool { return equal(got, s.token) }

// access says whether a request may use the page: through the session cookie the page set, or the
// token itself (a script: Authorization: Bearer). forms are the values its posts may carry as the
// form value: the session's, or the token for a script. The cookie's value is never the token, and
// the token in a cookie, like a session value as a bearer, lets nothing in.
func (s *Server) access(r *http.Request) (forms []string, ok bool) {
	for _, c := range r.CookiesNamed(s.cookie) {
		if f, ok := s.sessions.form(c.Value); ok {
			forms = append(forms, f)
			break
		}
	}
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.same(b) {
		forms = append(forms, s.token)
	}
	return forms, len(forms) > 0
}

const noToken = "This page needs the link that qkit questions serve printed: it carries a secret token. Open that link (or run qkit questions serve again for a new one)."

// page serves the list; ?token= trades the token for the cookie and redirects to the bare address,
// so the secret leaves the address bar and the history.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !s.same(tok) {
			s.reply(w, r, http.StatusUnauthorized, "Wrong token: this link is not the one the running qkit questions serve printed (it prints a new one each time it starts).")
			return
		}
		session, err := s.sessions.open()
		if err != nil {
			s.reply(w, r, http.StatusInternalServerError, "No session could be started: "+err.Error())
			return
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	forms, ok := s.access(r)
	if !ok {
		s.reply(w, r, http.StatusUnauthorized, noToken)
		return
	}
	sets, err := s.openSets()
	if err != nil {
		s.reply(w, r, http.StatusInternalServerError, "The question sets cannot be read: "+err.Error())
		return
	}
	views := make([]setView, len(sets))
	for i, sess := range sets {
		views[i] = s.view(sess, forms[0])
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages().ExecuteTemplate(w, "page", pageView{Sets: views}); err != nil {
		s.log.Warn("rendering the page failed", "error", err)
	}
}

// openSets lists the sets a person can still answer, oldest first.
func (s *Server) openSets() ([]*questions.Session, error) {
	all, err := s.st.List()
	if err != nil {
		return nil, err
	}
	var open []*questions.Session
	for _, sess := range all {
		if sess.Status.Status.Open() && sess.Request != nil {
			open = append(open, sess)
		}
	}
	return open, nil
}
