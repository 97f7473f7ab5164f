package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/questionsweb"
)

type serveOptions struct {
	addr        string
	allowRemote bool
	asJSON      bool
}

func newQuestionsServeCmd(a *app.App) *cobra.Command {
	opts := &serveOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a web page to answer question sets from any device",
		Long: `Serve a small web page that lists the question sets waiting for an answer, live, with each
question's options as radio buttons or checkboxes, free text, and a way to reject the set with a
reason. Approvals put to the questions store by the ACP backend show there too. The first answer
counts, whichever way it comes (this page, the assistant's own form, a terminal, a script); the page
says so when another way was first.

The page needs a secret token: the link printed at start carries it (a new one each start). Opening
the link trades the token for a session cookie of the browser's own and drops the token from the
address. The cookie never holds the token, since browsers send it to every other web server on
this host too; it opens the page only as that cookie, until the server stops. Scripts send the
token as 'Authorization: Bearer TOKEN' (--json prints it). Answers also need the page's form
value, and requests a browser marks as coming from another site are refused.

By default the page listens on a free port of 127.0.0.1, reachable only from this machine. A
non-loopback --addr makes it reachable from other machines (a phone, another laptop) and needs
--allow-remote. Anyone who can reach it and has the link can answer; the connection is not
encrypted. The ask_user_questions tool names the page (without the token) in its progress messages
while it runs. Ctrl-C stops it (exit 130, as for every command that waits); open pages say
the server stopped.`,
		Example: `  qkit questions serve
  qkit questions serve --addr 127.0.0.1:8080
  qkit questions serve --addr 0.0.0.0:8080 --allow-remote   # other devices, a trusted network
  qkit questions serve --json | jq --unbuffered -r .url   # prints the link at once, keeps serving`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runQuestionsServe(c.Context(), a, opts)
		},
	}
	c.Flags().StringVar(&opts.addr, "addr", "127.0.0.1:0", "listen on `HOST:PORT` (port 0: a free one)")
	c.Flags().BoolVar(&opts.allowRemote, "allow-remote", false, "allow a non-loopback --addr (reachable from other machines)")
	c.Flags().BoolVar(&opts.asJSON, "json", false, `print {"url", "address", "token"} as one JSON line at start`)
	_ = c.RegisterFlagCompletionFunc("addr", cobra.NoFileCompletions) // HOST:PORT, not a file
	return interruptible(c)
}

func runQuestionsServe(ctx context.Context, a *app.App, opts *serveOptions) error {
	ln, remote, err := questionsweb.Listen(opts.addr, opts.allowRemote)
	if err != nil {
		return err
	}
	defer ln.Close()
	st, err := openQuestions(a)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := questionsweb.New(st, questionsweb.Options{Logger: a.Logger, Now: a.Now})
	if err != nil {
		return err
	}
	url := srv.URL(ln.Addr())
	if opts.asJSON {
		line, _ := json.Marshal(map[string]string{"url": url, "address": ln.Addr().String(), "token": srv.Token()})
		fmt.Fprintf(a.IO.Out, "%s\n", line)
	} else {
		fmt.Fprintf(a.IO.Out, "Answer questions at %s\n", url)
	}
	if remote {
		fmt.Fprintln(a.IO.ErrOut, remoteWarning(ln.Addr()))
	}
	fmt.Fprintf(a.IO.ErrOut, "qkit: serving the question sets of %s; Ctrl-C stops\n", st.Location())
	if err := srv.Serve(ctx, ln, a.Config.Paths.State); err != nil {
		return err
	}
	fmt.Fprintln(a.IO.ErrOut, "qkit: stopped serving questions")
	return nil
}

// remoteWarning is what serving on a non-loopback address means. On every address at once
// (0.0.0.0, ::) the link shows 127.0.0.1, which another device must replace by this machine's
// address; on one address the link is already the one to open.
func remoteWarning(addr net.Addr) string {
	msg := fmt.Sprintf("qkit: serving on %s, reachable from other machines: anyone who can reach it and has the link can answer, and the connection is not encrypted.", addr)
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return msg + " From another device, use this machine's address in place of 127.0.0.1 in the link."
	}
	return msg + " Another device opens the link as printed."
}
