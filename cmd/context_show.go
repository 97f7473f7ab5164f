package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// contextShowOptions are the flags of `context show`.
type contextShowOptions struct {
	expand bool
	asJSON bool
}

func newContextShowCmd(a *app.App) *cobra.Command {
	opts := &contextShowOptions{}
	c := &cobra.Command{
		Use:   "show [--expand]",
		Short: "Show the context rules, the files they match and their token estimates",
		Long: `Show, in order:
  - the global rules and the active profile's rules, each with how many files it matches from the
    working directory;
  - the files in use with their token estimates (bytes/4), and the total;
  - the files the budget (setting context.max_tokens) would drop, largest first;
  - what is never sent: binary or non-UTF-8 files, and links out of the folder a rule must stay
    in (with where they lead).

--json prints {profile, max_tokens, rules, files, total_tokens, dropped, skipped, warnings}.

Files a relative rule matched are shown relative to the working directory; others as named
(under ~, or absolute); control characters in a name are shown escaped (\x1b). Problems met on
the way (links out, unreadable folders, pseudo file systems, a walk stopped by
context.walk_max_files or context.walk_timeout) are warnings on stderr.

--expand adds each file's content: on a terminal, control characters in it are shown escaped
(\x1b), newlines and tabs kept; piped, exact. --json prints one object, paths absolute:
  {profile, max_tokens, rules: {global: [{path, matches}], profile: [...]},
   files: [{path, scope, bytes, tokens, content?}], total_tokens, dropped: [...],
   skipped: [{path, scope, reason}], warnings: [...]}`,
		Example: `  qkit context show
  qkit context show --expand
  qkit --profile backend context show --json | jq '.total_tokens'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runContextShow(a, opts) },
	}
	c.Flags().BoolVar(&opts.expand, "expand", false, "print each file's content too")
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON (fields above)")
	return exposeRead(c)
}

func runContextShow(a *app.App, opts *contextShowOptions) error {
	env, err := loadContextEnv(a)
	if err != nil {
		return err
	}
	rep, err := env.store.Collect(env.profile, env.cwd, config.ContextMaxTokens.Get(a.Config), contextfiles.ReportOptions{Expand: opts.expand})
	if err != nil {
		return err
	}
	warnAll(a, rep.Warnings)
	if opts.asJSON {
		return output.JSON(a.IO.Out, rep)
	}
	home, _ := os.UserHomeDir()
	return renderReport(a.IO.Out, rep, pathShower{cwd: env.cwd, home: home}, opts.expand, a.IO.StdoutTTY)
}

// pathShower shows a file's path to a person: relative to the working directory when a relative
// rule matched it there (as git does), otherwise as it was named: under ~ when it lies in the home
// folder, else absolute. A file of a global ~ rule reads the same from every folder. The name comes
// from a repository, so control characters in it are shown escaped.
type pathShower struct{ cwd, home string }

func (s pathShower) show(p string, relative bool) string {
	if relative {
		if rel, err := filepath.Rel(s.cwd, p); err == nil && filepath.IsLocal(rel) {
			return contextfiles.Printable(rel)
		}
	}
	if s.home != "" && s.home != string(filepath.Separator) {
		if rel, err := filepath.Rel(s.home, p); err == nil && filepath.IsLocal(rel) {
			return contextfiles.Printable("~" + string(filepath.Separator) + rel)
		}
	}
	return contextfiles.Printable(p)
}

// renderReport prints a report for people; --json keeps absolute paths. With expand, each file's
// content follows; on a terminal (tty) it goes through termtext.Visible, since it comes from the
// repository; piped, it is exact.
func renderReport(w io.Writer, rep *contextfiles.Report, paths pathShower, expand, tty bool) error {
	var b strings.Builder
	rules := func(title string, rs []contextfiles.Rule) {
		b.WriteString(title + ":\n")
		if len(rs) == 0 {
			b.WriteString("    <none>\n")
		}
		for _, r := range rs {
			fmt.Fprintf(&b, "    %s (%s)\n", contextfiles.Printable(r.Path), plural(r.Matches, "match", "matches"))
		}
		b.WriteString("\n")
	}
	rules("global", rep.Rules.Global)
	rules(fmt.Sprintf("profile (%s)", rep.Profile), rep.Rules.Profile)

	if len(rep.Files) == 0 && len(rep.Dropped) == 0 {
		b.WriteString("No files in the current directory matched the rules above.\n")
	} else {
		fmt.Fprintf(&b, "%s in use:\n", plural(len(rep.Files), "matched file", "matched files"))
		for _, f := range rep.Files {
			fmt.Fprintf(&b, "    %-7s %s (~%s)\n", f.Scope, paths.show(f.Path, f.Relative), plural64(f.Tokens, "token", "tokens"))
		}
		fmt.Fprintf(&b, "\nTotal: ~%s (limit %d)\n", plural64(rep.TotalTokens, "token", "tokens"), rep.MaxTokens)
	}
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(&b, "\nTotal token count exceeds limit: %d. The following files will be automatically dropped when interacting with Q. Consider removing them.\n", rep.MaxTokens)
		const most = 10
		for i, f := range rep.Dropped {
			if i == most {
				fmt.Fprintf(&b, "    (%s more)\n", plural(len(rep.Dropped)-most, "file", "files"))
				break
			}
			fmt.Fprintf(&b, "    %-7s %s (~%s)\n", f.Scope, paths.show(f.Path, f.Relative), plural64(f.Tokens, "token", "tokens"))
		}
	}
	if len(rep.Skipped) > 0 {
		b.WriteString("\nNever sent:\n")
		for _, s := range rep.Skipped {
			fmt.Fprintf(&b, "    %-7s %s (%s)\n", s.Scope, paths.show(s.Path, s.Relative), contextfiles.Printable(s.Reason))
		}
	}
	if expand {
		for _, f := range rep.Files {
			if f.Content == nil {
				continue
			}
			content := *f.Content
			if tty {
				content = termtext.Visible(content)
			}
			fmt.Fprintf(&b, "\n[%s]\n%s", paths.show(f.Path, f.Relative), content)
			if !strings.HasSuffix(content, "\n") {
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural is n and the noun that fits it: "1 path", "2 paths".
func plural(n int, one, many string) string { return plural64(int64(n), one, many) }

func plural64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// contextPromptOptions are the flags of `context prompt`.
type contextPromptOptions struct {
	asJSON bool
}

// contextPromptJSON is the output of `context prompt --json`.
type contextPromptJSON struct {
	Profile  string   `json:"profile"`
	Prompt   string   `json:"prompt"`
	Warnings []string `json:"warnings"`
}

func newContextPromptCmd(a *app.App) *cobra.Command {
	opts := &contextPromptOptions{}
	c := &cobra.Command{
		Use:   "prompt [<message> | -]",
		Short: "Print the prompt that would be sent: the context block, then the message",
		Long: `Print exactly what qkit ask and ACP sessions send to Q for a message: the context files in a
"--- CONTEXT FILES BEGIN ---" ... "--- CONTEXT FILES END ---" block, a blank line, and the message
(read from stdin when it is -). With no matching file it prints the message alone. Warnings (files
dropped by the budget, binary files skipped) go to stderr.

A file is named on its "[path]" line with control characters escaped (\x1b, \x0a), so a name
cannot forge the block's markers. On a terminal the whole prompt is shown with control characters
escaped (newlines and tabs kept), so a file cannot hide text or move the cursor; piped, it is
byte for byte what is sent.

--json prints {profile, prompt, warnings}.`,
		Example: `  qkit context prompt "Review this change"
  git diff | qkit context prompt - > prompt.txt
  qkit context prompt --json "hi" | jq -r .prompt`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions, // a message, not a file
		RunE: func(_ *cobra.Command, args []string) error {
			msg := ""
			if len(args) == 1 {
				msg = args[0]
			}
			return runContextPrompt(a, opts, msg)
		},
	}
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print JSON: {profile, prompt, warnings}")
	return exposeRead(c)
}

func runContextPrompt(a *app.App, opts *contextPromptOptions, msg string) error {
	if msg == "-" {
		data, err := io.ReadAll(a.IO.In)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		msg = string(data)
	}
	env, err := loadContextEnv(a)
	if err != nil {
		return err
	}
	prompt, warnings, err := env.store.Prompt(env.profile, env.cwd, config.ContextMaxTokens.Get(a.Config), msg)
	if err != nil {
		return err
	}
	warnAll(a, warnings)
	if opts.asJSON {
		if warnings == nil {
			warnings = []string{}
		}
		return output.JSON(a.IO.Out, contextPromptJSON{Profile: env.profile, Prompt: prompt, Warnings: warnings})
	}
	// On a terminal the prompt is shown (context files may hold escape sequences); piped, it is the
	// prompt as sent, byte for byte.
	prompt = onScreen(a, prompt)
	if _, err := io.WriteString(a.IO.Out, prompt); err != nil {
		return err
	}
	if !strings.HasSuffix(prompt, "\n") {
		_, err = io.WriteString(a.IO.Out, "\n") // not prompt+"\n": that would copy the whole block
	}
	return err
}
