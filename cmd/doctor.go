//go:build !qkit_lite

package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/doctor"
	"github.com/qkit-cli/qkit/internal/output"
)

// doctorOptions are the flags of `qkit doctor`, and why the configuration could not be loaded.
type doctorOptions struct {
	asJSON    bool
	login     bool
	configErr error
}

func newDoctorCmd(a *app.App) *cobra.Command {
	opts := &doctorOptions{}
	c := withHead("doctor", &cobra.Command{
		Long: fmt.Sprintf(`Check, in one pass, what qkit needs and print one line per check: ok, warn or fail, what was
found and, for each that is not ok, the command that fixes it. Exits 0 when nothing fails
(warnings allowed) and 1 when a check fails.

The checks, in order:
  config          config.yaml found and parsed, its values (and the environment's) valid
  context         the active profile, and how many files and tokens it sends from this folder
  agent           agent.command found on PATH
  version         its --version, and so its flavour (q 1.x, or kiro-cli)
  login           whoami says someone is logged in (or KIRO_API_KEY, AMAZON_Q_SIGV4)
  backend         acp or chat, and why (agent.backend, what auto learned about this binary)
  acp             what the agent's ACP mode (kiro-cli acp) answers to initialize
  models          the models --model takes, and agent.model among them
  questions       the questions store: its folder, or the NATS server (reachable, authorized)
  questions-page  a running 'qkit questions serve', and whether it answers
  state-dir       the state folder is writable (a file is created and removed)
  data-dir        the data folder is writable

Every probe is bounded: they run at the same time, and whatever has not answered after %s
is stopped and reported as a warning, so doctor never hangs on an agent waiting for a login.
It changes nothing: it reads what auto learned without probing again for it, and it does not
refresh the model list.

With --json it prints {status, checks: [{name, status, detail, fix}]}: status is ok, warn or
fail (the worst of the checks), fix is "" for a check that is ok. The names above are stable.

--login runs the agent's own login (kiro-cli login, q login) in this terminal and then checks
the login again; editors run 'qkit doctor --login' when a person picks qkit's terminal login
method (ACP).`, doctor.Timeout),
		Example: `  qkit doctor
  qkit doctor --json | jq -r '.checks[] | select(.status != "ok") | .fix'
  qkit --profile work doctor
  qkit doctor --login`,
		Args: cobra.NoArgs,
		Annotations: map[string]string{
			// Bad values are what doctor reports, not a reason to refuse to run.
			annLenientConfig: "true",
		},
		PersistentPreRunE: func(c *cobra.Command, _ []string) error { return loadDoctorApp(a, c, opts) },
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.login {
				return runDoctorLogin(c, a)
			}
			return runDoctor(c, a, opts)
		},
	})
	c.Flags().BoolVar(&opts.asJSON, "json", false, "print {status, checks: [{name, status, detail, fix}]}")
	c.Flags().BoolVar(&opts.login, "login", false, "run the agent's login in this terminal, then check the login again")
	c.MarkFlagsMutuallyExclusive("json", "login")
	return changeFlags(exposeRead(interruptible(c)), "login")
}

// loadDoctorApp is the root's loading of the configuration (this command's PersistentPreRunE
// replaces the root's), except that a config file that cannot be read or parsed does not stop
// doctor: it is reported by the config check, and the other checks run on the defaults, the
// environment and --set.
func loadDoctorApp(a *app.App, c *cobra.Command, opts *doctorOptions) error {
	if err := checkFlags(c); err != nil {
		return err
	}
	catchInterrupts(c) // as the root's hook does: doctor's probes and --login run the agent
	ro := &rootOptions{}
	ro.configFile, _ = c.Flags().GetString("config")
	ro.logLevel, _ = c.Flags().GetString("log-level")
	ro.noInput, _ = c.Flags().GetBool("no-input")
	ro.set, _ = c.Flags().GetStringArray("set")
	err := loadApp(a, c, ro)
	if err == nil || output.Code(err) == output.ExitUsage {
		return err
	}
	opts.configErr = err
	overrides := map[string]string{}
	for _, kv := range ro.set { // loadApp checked their form before it read the file
		k, v, _ := strings.Cut(kv, "=")
		overrides[strings.TrimSpace(k)] = v
	}
	return a.Load(config.LoadOptions{File: ro.configFile, Overrides: overrides, SkipFile: true}, ro.logLevel)
}

func runDoctor(c *cobra.Command, a *app.App, opts *doctorOptions) error {
	dir, err := a.WorkingDir()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	rep := doctor.Run(c.Context(), doctor.Options{
		Config: a.Config, ConfigErr: opts.configErr, Profile: a.ProfileFlag, Dir: dir,
		Version: a.Version.Version, Logger: a.Logger,
	})
	if c.Context().Err() != nil {
		// A signal stopped every probe: their timeouts say nothing about the setup, so no report.
		return output.WithCode(output.ExitInterrupted, errors.New("interrupted: every probe was stopped"))
	}
	if opts.asJSON {
		err = output.JSON(a.IO.Out, rep)
	} else {
		err = printDoctor(a, rep)
	}
	if err != nil {
		return err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		what := "check"
		if len(failed) > 1 {
			what = "checks"
		}
		return output.Errorf(output.ExitFailure, "%d %s failed: %s", len(failed), what, strings.Join(failed, ", "))
	}
	return nil
}

// printDoctor prints one line per check: status, name, what was found and, when it is not ok, the
// command that fixes it. The status is coloured on a terminal without NO_COLOR.
func printDoctor(a *app.App, rep doctor.Report) error {
	p := a.Palette()
	width := 0
	for _, name := range doctor.Names {
		width = max(width, len(name))
	}
	var b strings.Builder
	for _, c := range rep.Checks {
		status := fmt.Sprintf("%-4s", c.Status)
		switch c.Status {
		case doctor.OK:
			status = p.Green(status)
		case doctor.Warn:
			status = p.Yellow(status)
		case doctor.Fail:
			status = p.Red(status)
		}
		fmt.Fprintf(&b, "%s  %-*s  %s", status, width, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(&b, "  %s %s", p.Bold("fix:"), c.Fix)
		}
		b.WriteByte('\n')
	}
	_, err := fmt.Fprint(a.IO.Out, b.String())
	return err
}

// runDoctorLogin is `qkit doctor --login`: the agent's own login, on this terminal.
func runDoctorLogin(c *cobra.Command, a *app.App) error {
	command := config.AgentCommand.Get(a.Config)
	if !a.IO.StdinTTY || !a.IO.StdoutTTY {
		return output.UsageErrorf("--login runs %s login, which needs a terminal (stdin and stdout): run it in one", command)
	}
	login, err := doctor.LogIn(c.Context(), command, a.IO.In, a.IO.Out, a.IO.ErrOut)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.IO.Out, "%s: logged in with %s\n", command, agent.Printable(login.Method))
	return nil
}
