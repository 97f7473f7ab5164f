// Package commands is qkit's internal-command registry: the commands an assistant may run on the
// user's behalf (the "internal_command" MCP tool), derived from qkit's own command tree rather than kept
// as a second list.
//
// The package never imports cobra. The command layer (cmd/) hands it two things: the Entries found by
// walking the cobra tree for commands annotated as exposed (each one "read" or "change"), and an
// Executor that checks and runs one argv against a fresh command tree in-process, with its output
// captured. Everything else lives here once, for every front end:
//
//   - the request type, {command, subcommand, args, flags}, decoded by ParseRequest and,
//     for chat front ends, parsed from a slash-command line by Registry.ParseLine;
//   - validation (Registry.Prepare): `Unknown command: X` plus the available ones, unknown
//     subcommands and flags said plainly, flag values and argument counts checked by the command's own
//     parser before anything runs; arguments travel as argv and never through a shell;
//   - the confirmation policy: reads run at once; a change (a "change" command, or a "read" command
//     given one of its change flags) needs the user's confirmation unless it is listed in the setting
//     internal.trusted (an entry such as "context add", or a group such as "context"); trust never
//     covers a change to internal.trusted itself or to agent.command (the program `ask` runs), nor
//     a flag marked Guarded that changes them with everything else (`settings reset --all`);
//   - execution (Registry.Run) with the output capped at agent.max_response_size by the same function
//     and notice as the agent runner (output.Cap);
//   - the audit log: one JSON line per run, declined change or interrupted question in
//     <state>/audit.log.
//
// # Using it from a front end (CLI, MCP, ACP)
//
//	reg := commands.New(entries, executor, commands.Options{...}) // cmd.InternalRegistry builds one
//	reg.List()                         // entries: Name, Short, Usage, Access, Flags (for /help, menus)
//	req, err := reg.ParseLine("/context add notes.md")  // or ParseRequest(json), or reg.FromWords
//	call, err := reg.Prepare(req)      // validated; call.CommandLine, call.NeedsConfirmation
//	res, err := reg.Run(ctx, call, commands.RunOptions{
//		Source:  commands.SourceACP,   // "cli", "mcp" or "acp", written to the audit log
//		Confirm: func(ctx context.Context, c *commands.Call) (bool, error) { ... ask the user ... },
//	})
//	// res.Output (capped), res.Stderr, res.ExitCode, res.Confirmed
//
// Run calls Confirm only when call.NeedsConfirmation. A nil Confirm for such a call returns
// ErrConfirmationNeeded without running anything. A declined call returns a Result with exit code 3
// and the error ErrDeclined, and is audited as declined; a question cancelled before an answer
// (ConfirmFunc's ErrInterrupted, or the context ending) returns exit code 130 and ErrInterrupted,
// and is audited as interrupted, at every door. A failing command is not an error of Run:
// its stderr and exit code are in the Result.
package commands
