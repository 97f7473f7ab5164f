//go:build !qkit_lite

package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/sessions"
	"github.com/qkit-cli/qkit/internal/termtext"
)

func newSessionsCmd(a *app.App) *cobra.Command {
	c := withHead("sessions", &cobra.Command{
		Long: `Every conversation qkit has with the agent is kept in one store, qkit.db in qkit's data folder:
  - sessions of qkit acp serve (both paths);
  - qkit ask on the ACP backend;
  - the q-developer-agent MCP tool.

These commands read and manage that store; an id may be shortened to any prefix only one
session starts with.

A session goes on only in its own folder: ask --session, the MCP tool's session_id and an
editor's session/load refuse it from another one. A session whose folder no longer exists is
listed, marked, and refused.`,
		Example: `  qkit sessions list --cwd . --since 7d
  qkit sessions show 3f2a
  qkit sessions export 3f2a -o fix-login.json && qkit sessions import fix-login.json
  qkit sessions prune --older-than 30d --keep 100 --yes`,
	})
	c.AddCommand(newSessionsListCmd(a), newSessionsShowCmd(a), newSessionsExportCmd(a), newSessionsImportCmd(a),
		newSessionsRmCmd(a), newSessionsPruneCmd(a))
	return c
}

// openSessions opens the session store of a's data folder.
func openSessions(ctx context.Context, a *app.App) (*sessions.Store, error) {
	st, err := sessions.Open(ctx, sessionsPath(a))
	if err == nil && st.SpoolProblem() != nil {
		a.Warnf("sessions spooled by qkit were not all taken in (the files are kept): %v", st.SpoolProblem())
	}
	return st, err
}

func sessionsPath(a *app.App) string { return sessions.Path(a.Config.Paths.Data) }

// sessionError maps the store's errors to exit codes: an unknown id is not found (4), an
// ambiguous prefix a usage error (2).
func sessionError(err error) error {
	switch {
	case errors.Is(err, sessions.ErrSessionNotFound):
		return output.WithCode(output.ExitNotFound, fmt.Errorf("%w: see qkit sessions list", err))
	case errors.Is(err, sessions.ErrAmbiguous):
		return output.WithCode(output.ExitUsage, err)
	}
	return err
}

// sessionListJSON is one session in list --json.
type sessionListJSON struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Cwd          string    `json:"cwd"`
	FolderExists bool      `json:"folder_exists"`
	Backend      string    `json:"backend"`
	Model        string    `json:"model"`
	Mode         string    `json:"mode"`
	Origin       string    `json:"origin"`
	Turns        int       `json:"turns"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type sessionsListOptions struct {
	cwd, since, backend string
	asJSON              bool
}

func newSessionsListCmd(a *app.App) *cobra.Command {
	opts := &sessionsListOptions{}
	c := &cobra.Command{
		Use:   "list [--cwd DIR] [--since AGE] [--backend text|acp] [--json]",
		Short: "List the sessions, most recently updated first",
		Long: `List the sessions, most recently updated first: id, title, folder, backend, model, last update,
turns and origin (ask, acp-serve, mcp or import). A folder that no longer exists is marked "(gone)".
On a terminal it prints a table with ids cut to 8 characters (any unambiguous prefix is accepted);
otherwise one tab-separated line per session with the whole id.

--json prints an array of {id, title, cwd, folder_exists, backend, model, mode, origin, turns,
created_at, updated_at}.`,
		Example: `  qkit sessions list
  qkit sessions list --cwd . --since 7d
  qkit sessions list --backend acp --json | jq -r '.[0].id'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSessionsList(c.Context(), a, opts) },
	}
	f := c.Flags()
	f.StringVar(&opts.cwd, "cwd", "", "only the sessions of the folder `DIR`")
	f.StringVar(&opts.since, "since", "", "only the sessions updated within `AGE` (36h, 7d, 2w) or since 2025-01-31")
	f.StringVar(&opts.backend, "backend", "", "only the sessions of `BACKEND` text (the agent's chat) or acp")
	f.BoolVar(&opts.asJSON, "json", false, "print JSON")
	_ = c.RegisterFlagCompletionFunc("backend", cobra.FixedCompletions([]string{sessions.BackendText, sessions.BackendACP}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("cwd", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	return exposeRead(c)
}

func runSessionsList(ctx context.Context, a *app.App, opts *sessionsListOptions) error {
	var f sessions.Filter
	switch opts.backend {
	case "", sessions.BackendText, sessions.BackendACP:
		f.Backend = opts.backend
	default:
		return output.UsageErrorf("invalid --backend %q: expected text or acp", opts.backend)
	}
	if opts.since != "" {
		t, err := sessions.ParseSince(opts.since, a.Now())
		if err != nil {
			return output.UsageErrorf("%v", err)
		}
		f.Since = t
	}
	if opts.cwd != "" {
		dir, err := absFrom(a, opts.cwd)
		if err != nil {
			return err
		}
		f.Cwd = dir
	}
	st, err := openSessions(ctx, a)
	if err != nil {
		return err
	}
	defer st.Close()
	// Rendered as the store reads them: no slice of every session's Summary (10,000 of them
	// were a third of what a list allocated).
	if opts.asJSON {
		out := []sessionListJSON{}
		err := st.EachSummary(ctx, f, func(s *sessions.Summary) error {
			out = append(out, sessionListJSON{ID: s.ID, Title: s.Title, Cwd: s.Cwd, FolderExists: !s.FolderGone, Backend: s.Backend,
				Model: s.Model, Mode: s.Mode, Origin: s.Origin, Turns: s.Turns, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt})
			return nil
		})
		if err != nil {
			return err
		}
		return output.JSON(a.IO.Out, out)
	}
	tty := a.IO.StdoutTTY
	var rows [][]string // for the aligned table, which measures every row first
	var lines *output.Lines
	if !tty {
		lines = output.NewLines(a.IO.Out)
	}
	err = st.EachSummary(ctx, f, func(s *sessions.Summary) error {
		// Ids are checked when a session is stored; one stored before may hold any text.
		id, folder, updated := termtext.VisibleLine(s.ID), s.Cwd, s.UpdatedAt.Format(time.RFC3339)
		if tty {
			id, updated = shortID(id), s.UpdatedAt.Local().Format("2006-01-02 15:04")
		}
		if s.FolderGone {
			folder += " (gone)"
		}
		backend := s.Backend
		if backend == "" {
			backend = sessions.BackendText
		}
		// Titles and folders come from prompts and editors: one line each, nothing a terminal obeys.
		row := [...]string{id, termtext.VisibleLine(s.Title), termtext.VisibleLine(folder), backend,
			termtext.VisibleLine(s.Model), updated, strconv.Itoa(s.Turns), s.Origin}
		if lines != nil {
			lines.Row(row[:]...)
		} else {
			rows = append(rows, append([]string(nil), row[:]...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if lines != nil {
		return lines.Flush()
	}
	if len(rows) == 0 && tty {
		a.Errorf("no sessions")
		return nil
	}
	return printTable(a.IO.Out, tty, []string{"id", "title", "folder", "backend", "model", "updated", "turns", "origin"}, rows)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// absFrom resolves path against a's working directory.
func absFrom(a *app.App, path string) (string, error) {
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	wd, err := a.WorkingDir()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	return filepath.Join(wd, path), nil
}

type sessionsShowOptions struct{ asJSON bool }

func newSessionsShowCmd(a *app.App) *cobra.Command {
	opts := &sessionsShowOptions{}
	c := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show a session's transcript",
		Long: `Show a session's settings and transcript: each prompt and reply, the reply's tool calls with how
they ended and its usage when the agent reported it (ask, the MCP tool and acp serve record both).
A reply is the agent's own text. A turn that did not end whole (cut at the size limit, timed out,
cancelled, failed) is followed by one line in brackets that says so, as in the next prompt's
history. The agent's text is printed with control characters escaped.

--json prints the session as sessions export --format json writes it.`,
		Example: `  qkit sessions show 3f2a
  qkit sessions show 3f2a --json | jq -r '.transcript[-1].text'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSessionIDs(a, true),
		RunE: func(c *cobra.Command, args []string) error {
			return runSessionsShow(c.Context(), a, args[0], opts)
		},
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON (the export format)")
	return exposeRead(c)
}

// exportSession reads session id (or an unambiguous prefix of it) as show and export give it.
func exportSession(ctx context.Context, a *app.App, id string) (sessions.Export, error) {
	st, err := openSessions(ctx, a)
	if err != nil {
		return sessions.Export{}, err
	}
	defer st.Close()
	e, err := st.Export(ctx, id)
	if err != nil {
		return sessions.Export{}, sessionError(err)
	}
	return e, nil
}

func runSessionsShow(ctx context.Context, a *app.App, id string, opts *sessionsShowOptions) error {
	e, err := exportSession(ctx, a, id)
	if err != nil {
		return err
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, e)
	}
	return sessions.WriteText(a.IO.Out, e, sessions.FolderGone(e.Session.Cwd))
}

type sessionsExportOptions struct{ format, out string }

func newSessionsExportCmd(a *app.App) *cobra.Command {
	opts := &sessionsExportOptions{}
	c := &cobra.Command{
		Use:   "export ID [--format json|md] [-o FILE]",
		Short: "Write a session to a portable file",
		Long: `Write a session to stdout, or to FILE with -o (replaced atomically: a reader sees the old file or
the whole new one).

--format json (the default) writes the file sessions import reads:
  {kind: "qkit-session", version: 1,
   session: {id, title, cwd, backend, model, mode, trusted_tools, origin, turns, created_at,
             updated_at},
   transcript: [{role, text, blocks, tools, usage, ended, truncated, at}]}

A reply's text is the agent's own, without qkit's notices; ended (end_turn, timed_out, cancelled,
error, or the agent's own stop reason) and truncated say how its turn ended. Replies stored before
qkit kept this have neither, and files without them import as they are. The agent's
own session id and the session's MCP servers are left out (they mean nothing on another machine,
and MCP server entries can carry tokens). --format md writes Markdown for people.`,
		Example: `  qkit sessions export 3f2a -o fix-login.json
  qkit sessions export 3f2a --format md -o fix-login.md`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSessionIDs(a, true),
		RunE: func(c *cobra.Command, args []string) error {
			return runSessionsExport(c.Context(), a, args[0], opts)
		},
	}
	c.Flags().StringVar(&opts.format, "format", "json", "`FORMAT` json (read by import) or md")
	c.Flags().StringVarP(&opts.out, "output", "o", "", "write to `FILE` instead of stdout")
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"json", "md"}, cobra.ShellCompDirectiveNoFileComp))
	return changeFlags(exposeRead(c), "output")
}

func runSessionsExport(ctx context.Context, a *app.App, id string, opts *sessionsExportOptions) error {
	if opts.format != "json" && opts.format != "md" {
		return output.UsageErrorf("invalid --format %q: expected json or md", opts.format)
	}
	e, err := exportSession(ctx, a, id)
	if err != nil {
		return err
	}
	var buf strings.Builder
	if opts.format == "md" {
		err = sessions.WriteMarkdown(&buf, e, sessions.FolderGone(e.Session.Cwd))
	} else {
		err = output.JSON(&buf, e)
	}
	if err != nil {
		return err
	}
	if opts.out == "" || opts.out == "-" {
		_, err = io.WriteString(a.IO.Out, buf.String())
		return err
	}
	path, err := absFrom(a, opts.out)
	if err != nil {
		return err
	}
	// A transcript may hold secrets: a new export file is private (0600 less the umask); an
	// existing one keeps its permissions, a device or /dev/stdout is written, not replaced.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := filestore.WriteNamed(path, []byte(buf.String()), 0o600); err != nil {
		return err
	}
	a.Errorf("exported session %s to %s", termtext.VisibleLine(e.Session.ID), path)
	return nil
}

type sessionsImportOptions struct{ asJSON bool }

func newSessionsImportCmd(a *app.App) *cobra.Command {
	opts := &sessionsImportOptions{}
	c := &cobra.Command{
		Use:   "import FILE [--json]",
		Short: "Make a new session from an export file",
		Long: `Make a new session from a file sessions export --format json wrote (FILE "-" reads stdin),
print its id, and say on stderr how many turns it stored. The new session has the file's
transcript, title, folder, model and backend, and origin import. acp serve's session/load replays
it and its next prompt carries the conversation; ask --session ID goes on with it. The whole
session is stored in one transaction: a failure or a kill leaves nothing behind.

An imported session grants nothing: the file's trusted tools and mode are not taken, since nobody
allowed them on this machine (the file may come from anyone). Allow tools again as you go on.

A file that is not an export (not JSON, cut short, another kind or version) is refused with exit 2,
and nothing is created. --json prints {id, title, cwd, turns}: turns counts the user messages
stored, whatever the file's "turns" says.`,
		Example: `  qkit sessions import fix-login.json
  ssh laptop qkit sessions export 3f2a | qkit sessions import -`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSessionsImport(c.Context(), a, args[0], opts)
		},
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {id, title, cwd, turns}")
	return exposeChange(c)
}

func runSessionsImport(ctx context.Context, a *app.App, file string, opts *sessionsImportOptions) error {
	var r io.Reader = a.IO.In
	if file != "-" {
		path, err := absFrom(a, file)
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return output.WithCode(output.ExitNotFound, fmt.Errorf("import: %w", err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, sessions.MaxExportSize+1))
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	e, err := sessions.ParseExport(data)
	if err != nil {
		return output.UsageErrorf("import %s: %v; nothing was imported", file, err)
	}
	st, err := openSessions(ctx, a)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := st.Import(ctx, e, uuid.NewString(), a.Now())
	if err != nil {
		return err
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, map[string]any{"id": rec.ID, "title": rec.Title, "cwd": rec.Cwd, "turns": rec.Turns})
	}
	fmt.Fprintln(a.IO.Out, rec.ID)
	a.Errorf("imported session %s: %d turn(s)", rec.ID, rec.Turns)
	if rec.FolderGone {
		a.Warnf("the session's folder %s does not exist here: create it (or move the project there) to go on with the session", termtext.VisibleLine(rec.Cwd))
	}
	return nil
}

type sessionsRmOptions struct{ yes, asJSON bool }

func newSessionsRmCmd(a *app.App) *cobra.Command {
	opts := &sessionsRmOptions{}
	c := &cobra.Command{
		Use:   "rm ID... [--yes] [--json]",
		Short: "Remove sessions and their transcripts",
		Long: `Remove the sessions named (ids or unambiguous prefixes) and their transcripts, all in one
transaction. On a terminal it asks first; elsewhere it needs --yes. An unknown id removes nothing
(exit 4). --json prints {removed: [ids]}.`,
		Example: `  qkit sessions rm 3f2a
  qkit sessions rm 3f2a 9c01 --yes`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeSessionIDs(a, false),
		RunE: func(c *cobra.Command, args []string) error {
			return runSessionsRm(c.Context(), a, args, opts)
		},
	}
	c.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {removed}")
	return exposeChange(interruptible(c))
}

func runSessionsRm(ctx context.Context, a *app.App, args []string, opts *sessionsRmOptions) error {
	st, err := openSessions(ctx, a)
	if err != nil {
		return err
	}
	defer st.Close()
	var ids, labels []string
	for _, arg := range args {
		r, err := st.Find(ctx, arg)
		if err != nil {
			return sessionError(err)
		}
		ids = append(ids, r.ID)
		labels = append(labels, fmt.Sprintf("%s %q", shortID(termtext.VisibleLine(r.ID)), termtext.VisibleLine(r.Title)))
	}
	if !opts.yes {
		ok, err := a.Confirm(ctx, "--yes", fmt.Sprintf("Remove %d session(s): %s?", len(ids), strings.Join(labels, ", ")))
		if err != nil {
			return err
		}
		if !ok {
			return output.Errorf(output.ExitRejected, "rm cancelled: no session was removed")
		}
	}
	if _, err := st.Delete(ctx, ids); err != nil {
		return err
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, map[string]any{"removed": ids})
	}
	a.Errorf("removed %d session(s)", len(ids))
	return nil
}

type sessionsPruneOptions struct {
	olderThan string
	keep      int
	yes       bool
	asJSON    bool
}

func newSessionsPruneCmd(a *app.App) *cobra.Command {
	opts := &sessionsPruneOptions{}
	c := &cobra.Command{
		Use:   "prune --older-than AGE [--keep N] [--yes] [--json]",
		Short: "Remove the sessions not used for a while",
		Long: `Remove the sessions last updated more than AGE ago (36h, 30d, 2w), except the N most recently
updated sessions (--keep), in one transaction; a session continued meanwhile by another process
stays. On a terminal it asks first; elsewhere it needs --yes. --json prints {removed: [ids]}.`,
		Example: `  qkit sessions prune --older-than 30d
  qkit sessions prune --older-than 2w --keep 50 --yes`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runSessionsPrune(c.Context(), a, opts) },
	}
	c.Flags().StringVar(&opts.olderThan, "older-than", "", "remove the sessions not updated for `AGE` (36h, 30d, 2w)")
	c.Flags().IntVar(&opts.keep, "keep", 0, "keep the `N` most recently updated sessions whatever their age")
	c.Flags().BoolVarP(&opts.yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {removed}")
	_ = c.MarkFlagRequired("older-than")
	return exposeChange(interruptible(c))
}

func runSessionsPrune(ctx context.Context, a *app.App, opts *sessionsPruneOptions) error {
	age, err := sessions.ParseAge(opts.olderThan)
	if err != nil {
		return output.UsageErrorf("--older-than: %v", err)
	}
	if opts.keep < 0 {
		return output.UsageErrorf("invalid --keep %d: expected 0 or more", opts.keep)
	}
	cutoff := a.Now().Add(-age)
	st, err := openSessions(ctx, a)
	if err != nil {
		return err
	}
	defer st.Close()
	cands, err := st.PruneCandidates(ctx, cutoff, opts.keep)
	if err != nil {
		return err
	}
	removed := []string{}
	if len(cands) > 0 {
		if !opts.yes {
			ok, err := a.Confirm(ctx, "--yes", fmt.Sprintf("Remove %d session(s) not updated since %s?", len(cands), cutoff.Local().Format("2006-01-02 15:04")))
			if err != nil {
				return err
			}
			if !ok {
				return output.Errorf(output.ExitRejected, "prune cancelled: no session was removed")
			}
		}
		ids := make([]string, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		if removed, err = st.Prune(ctx, ids, cutoff, opts.keep); err != nil {
			return err
		}
	}
	if opts.asJSON {
		return output.JSON(a.IO.Out, map[string]any{"removed": removed})
	}
	a.Errorf("removed %d session(s)", len(removed))
	return nil
}

// completeSessionIDs completes session ids, with their titles as descriptions: the first argument
// only, or (many) every argument.
func completeSessionIDs(a *app.App, firstOnly bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if firstOnly && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		data := ""
		if a.Config != nil {
			data = a.Config.Paths.Data
		} else if p, err := config.ResolvePaths(nil); err == nil {
			data = p.Data
		}
		return sessionCompletions(c.Context(), data, "", toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// sessionCompletions are the stored sessions (of the folder cwd, as sessions list --cwd has it;
// "": all) whose id starts with toComplete, newest first, as completion lines: the id and the
// title, through termtext (an id stored before sessionrec.SessionIDFor may be an agent's raw
// text). The store is never created here. ctx may be nil (a command run without one).
func sessionCompletions(ctx context.Context, data, cwd, toComplete string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	path := sessions.Path(data)
	if data == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil // completion never creates the store
	}
	st, err := sessions.Open(ctx, path)
	if err != nil {
		return nil
	}
	defer st.Close()
	list, err := st.Summaries(ctx, sessions.Filter{Cwd: cwd, Limit: 200})
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list {
		if !strings.HasPrefix(s.ID, toComplete) {
			continue
		}
		title := s.Title
		if title == "" {
			title = "(no prompt yet)"
		}
		// The shell shows the description: one line, nothing a terminal obeys.
		out = append(out, termtext.VisibleLine(s.ID)+"\t"+termtext.VisibleLine(title))
	}
	return out
}
