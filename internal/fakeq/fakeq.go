// Package fakeq is a stand-in for the agent CLI (`q`, or `kiro-cli`) used by tests and benchmarks.
// Everything it does is chosen through environment variables, so a test sets up a behaviour and
// then runs qkit as usual. FAKEQ_FLAVOUR picks which agent it imitates:
//
//	FAKEQ_FLAVOUR=q     q 1.19.7, as it behaves
//	FAKEQ_FLAVOUR=kiro  kiro-cli 2.x, as it behaves
//	(unset)             no real agent: the bare mechanics below (plain reply, no welcome text, no
//	                    banners), for tests of timeouts, sizes, streaming and process groups where
//	                    the agent's wording does not matter. Tests of agent behaviour name a flavour.
//
// What the flavours do, next to the behaviour of the real CLI each one imitates:
//
//   - "If any argument is exactly `-h` or `--help`, the wrapper prints help and exits 0 (so a prompt
//     `-h` never reaches the model)": q prints help for any such argument; kiro (clap) for one
//     before "--".
//   - "`-v/--verbose` ... sends logs to **stdout**": a log line before the reply.
//   - "`--trust-tools=` (empty) is a no-op with a warning": the warning on stderr.
//   - "with `--no-interactive`, no positional prompt and a non-terminal stdin, q reads all of stdin,
//     trims it, and bails with "Input must be supplied when running in non-interactive mode" if
//     empty": both.
//   - "q cuts a user message at 400,000 bytes ("...content truncated due to length"). kiro
//     documents the same": the prompt the model sees (FAKEQ_ECHO_PROMPT) is cut so.
//   - "Reply: on **stdout**, with colour codes even into a pipe (some hard-coded), and a green `> `
//     prefix before the reply (`\x1b[38;5;141m> \x1b[0m` in kiro 2.21.2). NO_COLOR removes colours
//     only": q's green and kiro's purple prefix before each response, coloured lines; NO_COLOR
//     drops the colours but kiro still ends the prefix with \x1b[0m.
//   - "Before a tool runs, stdout gets `🛠️  Using tool: NAME` with ` (trusted)` when trusted and
//     ` from mcp server S` for MCP tools, then a description block (`\n ⋮ \n ● ...`)": each tool
//     of FAKEQ_TOOLS.
//   - "stderr is never empty on success: welcome text, tips, ... "🤖 You are chatting with MODEL",
//     MCP load messages; kiro adds a `▸ Credits: ...` trailer on every success".
//   - "q 1.19.7: an untrusted tool stops the run: stderr `error: Tool approval required but
//     --no-interactive was specified. ...`, exit 1, after the `Using tool:` line".
//   - "q 1.19.7 quirk: after a tool has run, a later stream failure ("Amazon Q is having trouble
//     responding right now: ...") falls into the same approval error for the already-trusted
//     tool": FAKEQ_FAIL=stream after a trusted tool.
//   - "MCP tools are trusted only as `@server/tool` or `@server`; a bare name stays untrusted (with
//     a warning)".
//   - "kiro-cli 2.x: an untrusted tool is **denied** and the model carries on; exit 0. The model
//     sees text like `Command execute_bash is rejected because it matches one or more rules on the
//     denied list: - non-interactive mode (no user to approve)`": printed in the tool's block, and
//     the reply goes on.
//   - "One rare spinner ("Dividing up the work...") writes to stdout on a stream timeout":
//     FAKEQ_STREAM_TIMEOUT=1, drawn as q's spinner library draws it (frames without a line break,
//     the retried response's "> " after the last).
//   - "q: not logged in → `error: You are not logged in, please log in with q login`, exit 1. Bad
//     flag → exit 2": FAKEQ_LOGGED_OUT=1; an unknown flag.
//   - "Token expired mid-run → "Authentication Error" on stderr, empty stdout, **exit 0**. Other API
//     errors → message on stderr, **exit 0**, possibly after a partial reply": FAKEQ_FAIL=auth and
//     FAKEQ_FAIL=api, after whatever reply FAKEQ_OUTPUT gives.
//   - "q: unknown `--model` → "Model 'X' does not exist. Available models: ...", exit 1. Unknown
//     `--agent` → a warning on stderr, falls back to the default agent, exit 0": models are
//     FAKEQ_MODELS (default: the flavour's list), agents FAKEQ_AGENTS (default: any name).
//   - "kiro: ... 4 agent not found. Unknown `--model` warns and falls back. Invalid API key → exit 0,
//     empty stdout, "Authentication failed." on stderr": a KIRO_API_KEY starting with "bad".
//   - "**No credential at all in headless mode → a device-login flow that blocks forever.**": kiro
//     with FAKEQ_LOGGED_OUT=1 and no KIRO_API_KEY prints a device-login URL on stderr and sleeps.
//   - "`q whoami`: logged out → "Not logged in" on **stdout**, exit 1; logged in → "Logged in with
//     Builder ID" or "Logged in with IAM Identity Center (URL)"; `--format json` exists.
//     `AMAZON_Q_SIGV4=1` lets `q chat` work while whoami says logged out. kiro with `KIRO_API_KEY`
//     prints "Authenticated with API key"": FAKEQ_WHOAMI=idc picks Identity Center.
//   - "q's list comes from the service; its offline fallback is claude-sonnet-4 and
//     claude-3.7-sonnet; names match case-insensitively by name or id. kiro ids in 2026 include
//     `auto`, `claude-sonnet-4.5`, ... `kiro-cli chat --list-models --format json` prints
//     `{models, default_model}`; q 1.19.7 has no such flag": q refuses the flag (exit 2).
//
// The knobs (every flavour):
//
//	FAKEQ_RECORD=file      append this run's argv (without the program name) as one JSON line
//	FAKEQ_OUTPUT=text      print text to stdout ("\n" escapes are read as line breaks)
//	FAKEQ_OUTPUT_QUOTED=s  print s read as the inside of a Go string literal (\x1b, \u009b, \x00:
//	                       what an environment variable cannot hold), after FAKEQ_OUTPUT; with
//	                       FAKEQ_SPLIT=n in pieces of at most n characters (each its own write, or
//	                       its own agent_message_chunk in acp mode), so a sequence arrives split
//	FAKEQ_ECHO_PROMPT=1    print the prompt to stdout: the positional argument or, when there is
//	                       none, all of stdin (as q reads it in --no-interactive mode)
//	FAKEQ_LINES=n          print n lines "line 1" … "line n"
//	FAKEQ_BYTES=n          print n bytes as 84-byte lines (the last one may be shorter)
//	FAKEQ_INTERVAL=d       wait d (Go duration) between lines
//	FAKEQ_FIRST_STAMP=file after the first line is written, write the time (Unix nanoseconds) to file
//	FAKEQ_BEFORE_STAMP=file the same, but the time just before the first line is written: a latency
//	                       measured from it is never less than the real one
//	FAKEQ_STDERR=text      print text to stderr
//	FAKEQ_GRANDCHILD=file  start a grandchild process that sleeps for a minute; write its PID to file
//	FAKEQ_SLEEP=d          sleep d after printing, before exiting
//	FAKEQ_DEAF=file        ignore SIGTERM, SIGINT and SIGHUP, noting each (and, on ACP, the end of
//	                       stdin, then linger a minute) in file: see deaf.go
//	FAKEQ_EXIT=n           exit with status n (default 0)
//	FAKEQ_LOGGED_OUT=1     nobody is logged in
//
// The flavours' own knobs:
//
//	FAKEQ_TOOLS=a,@srv/b   the model uses these tools, in order, before the reply (@srv/b: tool b
//	                       of MCP server srv); trusted by --trust-all-tools or --trust-tools
//	FAKEQ_FAIL=kind        after the reply: auth (expired login), api (a service error), stream
//	                       (q: "having trouble responding"; after a trusted tool, q's false
//	                       approval error)
//	FAKEQ_STREAM_TIMEOUT=1 the stream times out after the reply's first line: q's spinner on stdout
//	                       ("\r⠋ Dividing up the work..." frames, no line break), then the rest of
//	                       the reply as the retried response, its "> " on the spinner's line
//	FAKEQ_MODELS=a,b       the models the agent knows (default: the flavour's)
//	FAKEQ_MODELS_QUOTED=s  the models as s read as the inside of a Go string literal (ids an
//	                       environment variable in a script cannot spell, \x1b), over FAKEQ_MODELS
//	FAKEQ_AGENTS=a,b       the agents the agent knows (default: any name)
//	FAKEQ_WHOAMI=idc       whoami reports IAM Identity Center instead of Builder ID
//	FAKEQ_DELAY=d          wait d before the first word of the reply (the model thinking)
//	FAKEQ_LOGIN_SILENT=1   kiro's device login waits without printing its URL (the sources say only
//	                       that it blocks)
//	FAKEQ_LIST_WAIT=file, FAKEQ_LIST_GRANDCHILD=file  a slow model list: see list_wait.go
//
// The unflavoured fake's own knobs (kept for the mechanics tests written before the flavours):
//
//	FAKEQ_ANSI=1           colour every stdout line and prefix the reply with a green "> "
//	FAKEQ_APPROVAL=1       fail as q does when a tool needs approval in --no-interactive mode
//	FAKEQ_APPROVAL_TOOL=t  the same, but only unless t is trusted (--trust-all-tools or --trust-tools);
//	                       first prints "Using tool: t" on stdout, naming the tool
//
// `whoami` prints a logged-in user unless FAKEQ_LOGGED_OUT is set. `acp` is an ACP agent imitating
// `kiro-cli acp`: see acp.go. Subcommands are looked up in the Subcommands table.
package fakeq

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ApprovalError is what the real CLI prints when a tool needs approval in non-interactive mode.
const ApprovalError = "Tool approval required but --no-interactive was specified. Use --trust-all-tools to automatically approve tools."

// sleeperEnv makes the fake run as the grandchild: it only sleeps.
const sleeperEnv = "FAKEQ_SLEEPER"

// Main runs the fake with os.Args and returns its exit status.
func Main() int { return Run(os.Args[1:]) }

// Run runs the fake with args (without the program name).
func Run(args []string) int {
	if d := os.Getenv(sleeperEnv); d != "" {
		dur, _ := time.ParseDuration(d)
		time.Sleep(dur)
		return 0
	}
	if f := os.Getenv("FAKEQ_RECORD"); f != "" {
		if err := record(f, args); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 97
		}
	}
	beDeaf() // deaf.go
	if len(args) > 0 {
		if sub, ok := Subcommands[args[0]]; ok {
			return sub(args)
		}
	}
	fmt.Fprintf(os.Stderr, "error: unrecognized subcommand %q\n", strings.Join(args, " "))
	return 2
}

// Subcommands are the fake's subcommands by name; each gets the whole argument list (its own name
// first) and returns the exit status. Another file of the package may add one in an init func.
var Subcommands = map[string]func(args []string) int{
	"chat":   chatCommand,
	"whoami": whoamiCommand,
	"acp":    func(args []string) int { return acpMain(args[1:]) }, // acp.go
}

// Flavour is the agent the fake imitates: "q", "kiro", or "" (the bare mechanics).
func Flavour() string { return os.Getenv("FAKEQ_FLAVOUR") }

func chatCommand(args []string) int {
	if f := Flavour(); f == "q" || f == "kiro" {
		return flavourChat(f, args)
	}
	return plainChat(args)
}

func whoamiCommand(args []string) int {
	if f := Flavour(); f == "q" || f == "kiro" {
		return flavourWhoami(f, args)
	}
	if os.Getenv("FAKEQ_LOGGED_OUT") != "" {
		fmt.Fprintln(os.Stderr, "error: Not logged in, please log in with q login")
		return 1
	}
	fmt.Println("Logged in with Builder ID")
	return 0
}

// plainChat is the unflavoured fake's chat.
func plainChat(args []string) int {
	if slices.Contains(args, "--list-models") {
		// As q 1.19.7 (the kiro flavour lists models): a refusal at once, never a chat that
		// FAKEQ_SLEEP would keep running while qkit waits for the list.
		fmt.Fprintf(os.Stderr, "error: unexpected argument '--list-models' found\n\nUsage: q chat [OPTIONS] [INPUT]\n")
		return 2
	}
	if f := os.Getenv("FAKEQ_GRANDCHILD"); f != "" {
		if err := startGrandchild(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 98
		}
	}
	if needsApproval(args) {
		if tool := os.Getenv("FAKEQ_APPROVAL_TOOL"); tool != "" && os.Getenv("FAKEQ_APPROVAL") == "" {
			fmt.Println("Using tool: " + tool)
		}
		fmt.Fprintln(os.Stderr, "error: "+ApprovalError)
		return 1
	}
	code := chat(args)
	if s := os.Getenv("FAKEQ_STDERR"); s != "" {
		fmt.Fprint(os.Stderr, unescape(s))
	}
	if d := envDuration("FAKEQ_SLEEP"); d > 0 {
		time.Sleep(d)
	}
	if code != 0 {
		return code
	}
	n, _ := strconv.Atoi(os.Getenv("FAKEQ_EXIT"))
	return n
}

func record(file string, args []string) error {
	line, err := json.Marshal(args)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

func needsApproval(args []string) bool {
	if os.Getenv("FAKEQ_APPROVAL") != "" {
		return true
	}
	tool := os.Getenv("FAKEQ_APPROVAL_TOOL")
	if tool == "" {
		return false
	}
	for _, a := range args {
		if a == "--trust-all-tools" || a == "-a" {
			return false
		}
		if list, ok := strings.CutPrefix(a, "--trust-tools="); ok {
			for _, t := range strings.Split(list, ",") {
				if t == tool {
					return false
				}
			}
		}
	}
	return true
}

func chat(args []string) int {
	deafTurn() // FAKEQ_DEAF (deaf.go)
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer w.Flush()
	interval := envDuration("FAKEQ_INTERVAL")
	ansi := os.Getenv("FAKEQ_ANSI") != ""
	stampFile := os.Getenv("FAKEQ_FIRST_STAMP")
	beforeFile := os.Getenv("FAKEQ_BEFORE_STAMP")
	first := true
	emit := func(line string) {
		if ansi {
			line = "\x1b[32m" + line + "\x1b[0m"
		}
		before := time.Now() // taken before the write, stored after it: the file costs time too
		_, _ = w.WriteString(line)
		if interval > 0 || first {
			_ = w.Flush()
		}
		if first && stampFile != "" {
			_ = os.WriteFile(stampFile, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
		}
		if first && beforeFile != "" {
			_ = os.WriteFile(beforeFile, []byte(strconv.FormatInt(before.UnixNano(), 10)), 0o600)
		}
		first = false
		if interval > 0 {
			time.Sleep(interval)
		}
	}
	if ansi {
		_, _ = w.WriteString("\x1b[38;5;10m> \x1b[0m")
	}
	if os.Getenv("FAKEQ_ECHO_PROMPT") != "" {
		if p, ok := prompt(args[1:]); ok {
			emit(p + "\n")
		} else if in, err := io.ReadAll(os.Stdin); err == nil && len(in) > 0 {
			emit(strings.TrimSpace(string(in)) + "\n")
		}
	}
	emitKnobs(1, func(s string) bool { emit(s); return true })
	return 0
}

// prompt finds q chat's positional prompt among its flags, as q's parser would.
func prompt(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case a == "--agent" || a == "--model" || a == "--profile":
			i++ // the flag's value
		case strings.HasPrefix(a, "-"):
		default:
			return a, true
		}
	}
	return "", false
}

func startGrandchild(pidFile string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c := exec.Command(self)
	c.Env = append(os.Environ(), sleeperEnv+"=60s")
	// The grandchild keeps q's stdout and stderr, as a real helper process would: a runner that waits
	// for the pipes to close without killing the process group hangs for the whole minute.
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return err
	}
	return os.WriteFile(pidFile, []byte(strconv.Itoa(c.Process.Pid)), 0o600)
}

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

func unescape(s string) string { return strings.ReplaceAll(s, `\n`, "\n") }
