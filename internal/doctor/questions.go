package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/natsstore"
)

// checkQuestions: where question sets wait. The file store is a folder under the state folder (the
// state-dir check tests writing there); a NATS store is connected to, within the time left, which
// tells whether the server is reachable, lets qkit in and has JetStream.
func checkQuestions(ctx context.Context, o Options) Check {
	c := Check{Name: CheckQuestions, Status: OK}
	cfg := o.Config
	if config.QuestionsStore.Get(cfg) != "nats" {
		dir := filepath.Join(cfg.Paths.State, "questions")
		c.Detail = "file store: " + dir
		if d := checkDir(CheckQuestions, "questions", dir); d.Status != OK {
			return d
		}
		return c
	}
	nc := natsstore.ConfigFrom(cfg)
	left := time.Until(deadline(ctx))
	if left <= 0 {
		c.Status, c.Detail, c.Fix = Warn, "not checked: no time was left", "qkit questions list"
		return c
	}
	nc.ConnectTimeout, nc.OpTimeout = left, left
	st, err := natsstore.New(nc, questions.Options{Logger: o.Logger})
	if err == nil {
		c.Detail = "NATS store: " + st.Location() + ", reachable, authorized, JetStream on"
		_ = st.Close()
		return c
	}
	c.Status, c.Detail = Fail, "NATS store: "+err.Error()
	c.Fix = natsFix(cfg, nc, err)
	return c
}

// deadline is ctx's deadline, or a second from now when it has none.
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Second)
}

// natsFix is the command that most likely makes the NATS store work, for err: the credential when
// the server refused it, a server with JetStream when it has none, a server at all when none
// answers on a loopback address, the URL otherwise.
func natsFix(cfg *config.Config, nc natsstore.Config, err error) string {
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(msg, "authorization violation") || strings.Contains(msg, "authentication"):
		if nc.Creds != "" {
			return settingFix(config.QuestionsNATSCreds.Value(cfg), "/path/to/user.creds")
		}
		return "export " + config.QuestionsNATSToken.Key().EnvName() + "=TOKEN"
	case strings.Contains(msg, "jetstream is not enabled"):
		return "nats-server -js"
	case strings.HasPrefix(msg, "questions.nats_"):
		return "qkit settings list"
	}
	if loopback(nc.URL) {
		return "nats-server -js"
	}
	return settingFix(config.QuestionsNATSURL.Value(cfg), "nats://HOST:4222")
}

// loopback reports whether every server of a NATS URL list is on this machine.
func loopback(list string) bool {
	for _, u := range strings.Split(list, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			return false
		}
		switch p.Hostname() {
		case "127.0.0.1", "localhost", "::1":
		default:
			return false
		}
	}
	return true
}

// checkPage: a `qkit questions serve` announced in the state folder, and whether it answers.
func checkPage(ctx context.Context, o Options) Check {
	c := Check{Name: CheckPage, Status: OK}
	r, ok := questions.FindPage(o.Config.Paths.State)
	if !ok {
		c.Detail = "none running (qkit questions serve starts one)"
		return c
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, r.URL, nil)
	if err == nil {
		var resp *http.Response
		// The page without its token: any answer at all says the server is there.
		resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err == nil {
			resp.Body.Close()
			c.Detail = fmt.Sprintf("served at %s by process %d", r.URL, r.Process.PID)
			return c
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	c.Status = Warn
	c.Detail = fmt.Sprintf("process %d announces a page at %s, but it does not answer: %v", r.Process.PID, r.URL, err)
	c.Fix = fmt.Sprintf("kill %d; qkit questions serve", r.Process.PID)
	return c
}
