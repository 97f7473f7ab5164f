package cmd

import "github.com/spf13/cobra"

// annExposure marks a command as reachable by assistants through the internal-command registry
// (qkit exec internal, the internal_command MCP tool, ACP slash commands). Its value says whether the
// command only reads ("read") or changes state ("change"); changes need the user's confirmation.
// Commands without it are never exposed.
const annExposure = "qkit/exposure"

// Exposure values.
const (
	exposureRead   = "read"
	exposureChange = "change"
)

func exposeRead(c *cobra.Command) *cobra.Command   { return annotate(c, annExposure, exposureRead) }
func exposeChange(c *cobra.Command) *cobra.Command { return annotate(c, annExposure, exposureChange) }

func annotate(c *cobra.Command, key, value string) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
	return c
}

// annChangeFlags lists, comma-separated, the flags that turn an exposed "read" command into a change
// (e.g. `context profile` lists profiles, but with --create, --delete or --rename changes them).
const annChangeFlags = "qkit/change-flags"

func changeFlags(c *cobra.Command, flags string) *cobra.Command {
	return annotate(c, annChangeFlags, flags)
}

// annGuardedFlags lists, comma-separated, the flags with which a change reaches the settings trust
// never covers (internal.trusted, agent.command): `settings reset --all` resets them too, so it
// always needs the user's confirmation, whatever internal.trusted lists.
const annGuardedFlags = "qkit/guarded-flags"

func guardedFlags(c *cobra.Command, flags string) *cobra.Command {
	return annotate(c, annGuardedFlags, flags)
}

// annInterruptible marks commands that wait (for the agent, a person or a client: every command that
// can open a prompt is one) and so handle
// Ctrl-C and SIGTERM themselves: their context is cancelled and they clean up (stop the agent's
// process group, mark a question set abandoned) before exiting 130. Other commands finish in
// milliseconds and keep the default, immediate exit: installing the handler costs a thread and about
// a millisecond of start-up.
const annInterruptible = "qkit/interruptible"

func interruptible(c *cobra.Command) *cobra.Command { return annotate(c, annInterruptible, "true") }
