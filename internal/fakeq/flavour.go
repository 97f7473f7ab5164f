package fakeq

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PromptCut is where q (and kiro) cut a user message, and the text it appends.
const (
	PromptCut       = 400_000
	PromptCutNotice = "...content truncated due to length"
)

// DeniedText is kiro-cli 2.x's refusal of an untrusted tool in --no-interactive mode (%s: the tool).
const DeniedText = "Command %s is rejected because it matches one or more rules on the denied list:\n  - non-interactive mode (no user to approve)"

// DeviceLoginText is what kiro-cli prints on stderr when it starts a device login without a
// credential; it then waits for a browser that never comes.
const DeviceLoginText = "To sign in, open this URL in your browser: https://view.awsapps.com/start/#/device?user_code=FAKE-CODE\n"

// The flavours' model lists: q's offline fallback, and kiro's ids of 2026.
var flavourModels = map[string][]string{
	"q":    {"claude-sonnet-4", "claude-3.7-sonnet"},
	"kiro": {"auto", "claude-sonnet-4.5", "claude-haiku-4.5", "claude-sonnet-4.6", "claude-opus-4.5", "claude-opus-4.6"},
}

// chatArgs is `chat`'s command line as clap would read it.
type chatArgs struct {
	noInteractive bool
	agent, model  string
	modelSet      bool
	trustAll      bool
	trustTools    []string
	trustToolsSet bool
	verbose       bool
	listModels    bool
	format        string
	prompt        string
	hasPrompt     bool
	help          bool
}

func parseChat(flavour string, args []string) (chatArgs, error) {
	var c chatArgs
	value := func(i *int, a, name string) (string, error) {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, nil
		}
		if *i+1 >= len(args) {
			return "", fmt.Errorf("a value is required for '%s <%s>' but none was supplied", name, strings.ToUpper(strings.TrimLeft(name, "-")))
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		switch {
		case a == "--":
			if i+1 < len(args) {
				c.prompt, c.hasPrompt = args[i+1], true
			}
			return c, nil
		case a == "-h" || a == "--help":
			c.help = true
		case a == "--no-interactive" || a == "--non-interactive":
			c.noInteractive = true
		case a == "--resume" || a == "-r":
		case a == "--trust-all-tools" || a == "-a":
			c.trustAll = true
		case a == "--verbose" || a == "-v":
			c.verbose = true
		case a == "--list-models" && flavour == "kiro":
			c.listModels = true
		case a == "--agent" || a == "--profile" || strings.HasPrefix(a, "--agent=") || strings.HasPrefix(a, "--profile="):
			name := "--agent"
			if strings.HasPrefix(a, "--profile") {
				name = "--profile"
			}
			c.agent, err = value(&i, a, name)
		case a == "--model" || strings.HasPrefix(a, "--model="):
			c.model, err = value(&i, a, "--model")
			c.modelSet = true
		case a == "--format" || strings.HasPrefix(a, "--format="):
			c.format, err = value(&i, a, "--format")
		case a == "--resume-id" || strings.HasPrefix(a, "--resume-id=") && flavour == "kiro":
			_, err = value(&i, a, "--resume-id")
		case strings.HasPrefix(a, "--trust-tools="):
			c.trustToolsSet = true
			for _, t := range strings.Split(strings.TrimPrefix(a, "--trust-tools="), ",") {
				if t = strings.TrimSpace(t); t != "" {
					c.trustTools = append(c.trustTools, t)
				}
			}
		case strings.HasPrefix(a, "-"):
			return c, fmt.Errorf("unexpected argument '%s' found", a)
		default:
			if c.hasPrompt {
				return c, fmt.Errorf("unexpected argument '%s' found", a)
			}
			c.prompt, c.hasPrompt = a, true
		}
		if err != nil {
			return c, err
		}
	}
	return c, nil
}

// wrapperHelp reports whether q's wrapper (any argument exactly -h or --help) or clap (kiro: one
// before "--") would print help instead of running the chat.
func wrapperHelp(flavour string, args []string) bool {
	for _, a := range args {
		if a == "--" && flavour == "kiro" {
			return false
		}
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}

// out writes stdout as the flavour colours it, with the pace and stamps of the knobs.
type out struct {
	w        *bufio.Writer
	flavour  string
	colour   bool
	interval time.Duration
	stamp    string
	before   string
	first    bool
	// prefixed is set by prefix: the response's "> " goes out with its first line, so a response
	// that never starts (an expired token) leaves stdout empty, as the real CLI does.
	prefixed bool
}

func newOut(flavour string) *out {
	return &out{
		w: bufio.NewWriterSize(os.Stdout, 64<<10), flavour: flavour, colour: os.Getenv("NO_COLOR") == "",
		interval: envDuration("FAKEQ_INTERVAL"), stamp: os.Getenv("FAKEQ_FIRST_STAMP"), before: os.Getenv("FAKEQ_BEFORE_STAMP"), first: true,
	}
}

func (o *out) paint(code, s string) string {
	if !o.colour {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// prefix starts a response: q's green "> ", kiro's purple one (whose reset survives NO_COLOR),
// written before the response's first line.
func (o *out) prefix() { o.prefixed = true }

func (o *out) writePrefix() {
	o.prefixed = false
	switch {
	case o.flavour == "kiro" && o.colour:
		o.w.WriteString("\x1b[38;5;141m> \x1b[0m")
	case o.flavour == "kiro":
		o.w.WriteString("> \x1b[0m")
	default:
		o.w.WriteString(o.paint("32", "> "))
	}
}

// line writes one line of the reply (with its line break, if any).
func (o *out) line(s string) {
	before := time.Now()
	if o.prefixed {
		o.writePrefix()
	}
	body, nl := strings.CutSuffix(s, "\n")
	o.w.WriteString(o.paint("1", body))
	if nl {
		o.w.WriteString("\n")
	}
	if o.interval > 0 || o.first {
		o.w.Flush()
	}
	if o.first && o.stamp != "" {
		_ = os.WriteFile(o.stamp, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600)
	}
	if o.first && o.before != "" {
		_ = os.WriteFile(o.before, []byte(strconv.FormatInt(before.UnixNano(), 10)), 0o600)
	}
	o.first = false
	if o.interval > 0 {
		time.Sleep(o.interval)
	}
}

func (o *out) raw(s string) { o.w.WriteString(s) }

// spinnerFrames are the "dots" spinner's first frames.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼"}

// streamTimeout is q's answer to a stream timeout: its spinner on stdout, each frame "\r", the
// glyph, a space and "Dividing up the work..." with no line break (the last frame is drawn
// again when the spinner is dropped), the cursor hidden and then cleared on stderr, and the
// retried response's "> " on the spinner's line.
func (o *out) streamTimeout() {
	o.w.Flush()
	fmt.Fprint(os.Stderr, "\x1b[?25l")
	for _, f := range append(spinnerFrames, spinnerFrames[len(spinnerFrames)-1]) {
		o.w.WriteString("\r" + f + " Dividing up the work...")
	}
	o.w.Flush()
	fmt.Fprint(os.Stderr, "\x1b[0m\x1b[1G\x1b[?25h\x1b[2K")
	o.prefix()
}

// tool is one tool of FAKEQ_TOOLS.
type tool struct{ name, server string }

func parseTools(spec string) []tool {
	var tools []tool
	for _, t := range strings.Split(spec, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(t, "@"); ok {
			server, name, _ := strings.Cut(rest, "/")
			tools = append(tools, tool{name: name, server: server})
			continue
		}
		tools = append(tools, tool{name: t})
	}
	return tools
}

// trusted says whether c trusts t: --trust-all-tools, or its name in --trust-tools (an MCP tool
// only as @server/tool or @server).
func (c chatArgs) trusted(t tool) bool {
	if c.trustAll {
		return true
	}
	for _, n := range c.trustTools {
		if t.server == "" && n == t.name || t.server != "" && (n == "@"+t.server+"/"+t.name || n == "@"+t.server) {
			return true
		}
	}
	return false
}

func (t tool) description() string {
	switch t.name {
	case "fs_read", "read":
		return "Reading file: main.go, all lines"
	case "fs_write", "write":
		return "Path: notes.txt\n\n+    1: a new line"
	case "execute_bash", "shell":
		return "I will run the following shell command: \nls -la"
	}
	return "Running " + t.name + " with the param:\n ⋮  {}"
}

func flavourChat(flavour string, args []string) int {
	if wrapperHelp(flavour, args[1:]) {
		fmt.Printf("Usage: %s chat [OPTIONS] [INPUT]\n\nOptions:\n      --no-interactive  Run without user input\n  -h, --help            Print help\n", name(flavour))
		return 0
	}
	c, err := parseChat(flavour, args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n\nUsage: %s chat [OPTIONS] [INPUT]\n\nFor more information, try '--help'.\n", err, name(flavour))
		return 2
	}
	models := flavourModels[flavour]
	if m := os.Getenv("FAKEQ_MODELS"); m != "" {
		models = strings.Split(m, ",")
	}
	if m := os.Getenv("FAKEQ_MODELS_QUOTED"); m != "" {
		text, err := strconv.Unquote(`"` + m + `"`)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeq: FAKEQ_MODELS_QUOTED is not a Go string literal's inside:", err)
			return 98
		}
		models = strings.Split(text, ",")
	}
	if c.listModels {
		return listModels(c, models)
	}
	// Logging in comes first: q refuses, kiro without a credential starts a device login.
	loggedOut := os.Getenv("FAKEQ_LOGGED_OUT") != ""
	key := os.Getenv("KIRO_API_KEY")
	switch {
	case flavour == "q" && loggedOut && os.Getenv("AMAZON_Q_SIGV4") == "":
		fmt.Fprintln(os.Stderr, "error: You are not logged in, please log in with q login")
		return 1
	case flavour == "kiro" && strings.HasPrefix(key, "bad"):
		fmt.Fprint(os.Stderr, welcome(flavour, "auto"))
		fmt.Fprintln(os.Stderr, "Authentication failed.")
		return 0
	case flavour == "kiro" && loggedOut && key == "":
		if os.Getenv("FAKEQ_LOGIN_SILENT") == "" {
			fmt.Fprint(os.Stderr, DeviceLoginText)
		}
		time.Sleep(time.Hour)
		return 1
	}
	deafTurn() // FAKEQ_DEAF (deaf.go)
	if f := os.Getenv("FAKEQ_GRANDCHILD"); f != "" {
		if err := startGrandchild(f); err != nil {
			fmt.Fprintln(os.Stderr, "fakeq:", err)
			return 98
		}
	}
	model := models[0]
	if c.modelSet {
		i := slices.IndexFunc(models, func(m string) bool { return strings.EqualFold(m, c.model) })
		switch {
		case i >= 0:
			model = models[i]
		case flavour == "q":
			fmt.Fprintf(os.Stderr, "error: Model '%s' does not exist. Available models: %s\n", c.model, strings.Join(models, ", "))
			return 1
		default:
			fmt.Fprintf(os.Stderr, "Warning: model '%s' not found, using the default model %s\n", c.model, model)
		}
	}
	if c.agent != "" {
		if known := os.Getenv("FAKEQ_AGENTS"); known != "" && !slices.Contains(strings.Split(known, ","), c.agent) {
			if flavour == "kiro" {
				fmt.Fprintf(os.Stderr, "error: Agent not found: %s\n", c.agent)
				return 4
			}
			fmt.Fprintf(os.Stderr, "Error: no agent with name %s found. Falling back to user specified default\n", c.agent)
		}
	}
	if c.trustToolsSet && len(c.trustTools) == 0 {
		fmt.Fprintln(os.Stderr, "WARNING: --trust-tools was given no tools; no tool is trusted")
	}
	tools := parseTools(os.Getenv("FAKEQ_TOOLS"))
	for _, n := range c.trustTools {
		if !strings.HasPrefix(n, "@") && slices.ContainsFunc(tools, func(t tool) bool { return t.server != "" && t.name == n }) {
			fmt.Fprintf(os.Stderr, "WARNING: %s is the name of an MCP tool: trust it as @SERVER/%s\n", n, n)
		}
	}
	prompt := c.prompt
	if !c.hasPrompt {
		in, _ := io.ReadAll(os.Stdin)
		prompt = strings.TrimSpace(string(in))
	}
	if strings.TrimSpace(prompt) == "" {
		fmt.Fprintln(os.Stderr, "error: Input must be supplied when running in non-interactive mode")
		return 1
	}
	if len(prompt) > PromptCut {
		prompt = prompt[:PromptCut] + PromptCutNotice
	}

	fmt.Fprint(os.Stderr, welcome(flavour, model))
	time.Sleep(envDuration("FAKEQ_DELAY")) // the model thinking before its first word
	o := newOut(flavour)
	defer o.w.Flush()
	if c.verbose {
		o.raw(time.Now().UTC().Format(time.RFC3339) + "  INFO chat_cli::cli::chat: verbose logging on stdout\n")
	}
	ranTool := false
	if len(tools) > 0 {
		o.prefix()
		o.line("Let me use the tools for that.\n")
		for _, t := range tools {
			trusted := c.trusted(t)
			o.raw("\n" + o.paint("35", "🛠️  Using tool: "+t.name))
			if t.server != "" {
				o.raw(" from mcp server " + o.paint("35", t.server))
			}
			if trusted {
				o.raw(o.paint("32", " (trusted)"))
			}
			o.raw("\n ⋮ \n ● " + t.description() + "\n")
			o.w.Flush()
			switch {
			case trusted:
				o.raw(" ⋮ \n ● Completed in 0.01s\n\n")
				ranTool = true
			case flavour == "q":
				o.w.Flush()
				fmt.Fprintln(os.Stderr, "error: Tool approval required but --no-interactive was specified. Use --trust-all-tools to automatically approve tools.")
				return 1
			default:
				o.raw(" ⋮ \n ● Execution failed after 0.0s:\n" + fmt.Sprintf(DeniedText, t.name) + "\n\n")
			}
		}
	}
	o.prefix()
	if os.Getenv("FAKEQ_ECHO_PROMPT") != "" {
		o.line(prompt + "\n")
	}
	lines := 0
	emitKnobs(1, func(s string) bool {
		o.line(s)
		if lines++; lines == 1 && os.Getenv("FAKEQ_STREAM_TIMEOUT") != "" {
			o.streamTimeout()
		}
		return true
	})
	o.w.Flush()
	if s := os.Getenv("FAKEQ_STDERR"); s != "" {
		fmt.Fprint(os.Stderr, unescape(s))
	}
	switch os.Getenv("FAKEQ_FAIL") {
	case "auth":
		if flavour == "kiro" {
			fmt.Fprintln(os.Stderr, "Authentication failed.")
		} else {
			fmt.Fprintln(os.Stderr, "\x1b[31mAuthentication Error\x1b[0m: your login expired; log in again with q login")
		}
		return 0
	case "api":
		fmt.Fprintln(os.Stderr, "\x1b[31mError\x1b[0m: The service is currently overloaded. Please try again in a few minutes.")
		return 0
	case "stream":
		agentName := "Amazon Q"
		if flavour == "kiro" {
			agentName = "Kiro"
		}
		fmt.Fprintf(os.Stderr, "%s is having trouble responding right now: dispatch failure\n", agentName)
		if flavour == "q" && ranTool {
			fmt.Fprintln(os.Stderr, "error: Tool approval required but --no-interactive was specified. Use --trust-all-tools to automatically approve tools.")
			return 1
		}
		return 0
	}
	if d := envDuration("FAKEQ_SLEEP"); d > 0 {
		o.w.Flush()
		time.Sleep(d)
	}
	if flavour == "kiro" {
		fmt.Fprintln(os.Stderr, "\n▸ Credits: 0.12 • Time: 1s")
	}
	n, _ := strconv.Atoi(os.Getenv("FAKEQ_EXIT"))
	return n
}

// emitKnobs sends the reply the output knobs ask for, FAKEQ_OUTPUT's lines, FAKEQ_LINES and
// FAKEQ_BYTES (as 84-byte lines, perChunk of them to an emit), until emit returns false; it
// reports whether everything went out.
func emitKnobs(perChunk int, emit func(string) bool) bool {
	if s := nextReply(); s != "" { // replies.go
		for _, line := range strings.SplitAfter(s, "\n") {
			if line != "" && !emit(line) {
				return false
			}
		}
	}
	if s := os.Getenv("FAKEQ_OUTPUT"); s != "" {
		for _, line := range strings.SplitAfter(unescape(s), "\n") {
			if line != "" && !emit(line) {
				return false
			}
		}
	}
	if s := os.Getenv("FAKEQ_OUTPUT_QUOTED"); s != "" {
		text, err := strconv.Unquote(`"` + s + `"`)
		if err != nil {
			text = "FAKEQ_OUTPUT_QUOTED is not a Go string literal's inside: " + err.Error() + "\n"
		}
		n, _ := strconv.Atoi(os.Getenv("FAKEQ_SPLIT"))
		for text != "" {
			piece := text
			if n > 0 && utf8.RuneCountInString(text) > n {
				cut := 0
				for range n {
					_, size := utf8.DecodeRuneInString(text[cut:])
					cut += size
				}
				piece = text[:cut]
			}
			if !emit(piece) {
				return false
			}
			text = text[len(piece):]
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("FAKEQ_LINES")); n > 0 {
		for i := 1; i <= n; i++ {
			if !emit("line " + strconv.Itoa(i) + "\n") {
				return false
			}
		}
	}
	if n, _ := strconv.ParseInt(os.Getenv("FAKEQ_BYTES"), 10, 64); n > 0 {
		chunk := strings.Repeat(strings.Repeat("y", 83)+"\n", perChunk)
		for n > 0 {
			c := chunk
			if int64(len(c)) > n {
				c = c[:n]
			}
			if !emit(c) {
				return false
			}
			n -= int64(len(c))
		}
	}
	return true
}

func name(flavour string) string {
	if flavour == "kiro" {
		return "kiro-cli"
	}
	return "q"
}

// welcome is the stderr text before every reply.
func welcome(flavour, model string) string {
	if flavour == "kiro" {
		return "\x1b[38;5;141mWelcome to Kiro!\x1b[0m\n\n💡 Did you know? You can resume the last conversation with kiro-cli chat --resume\n\n" +
			"✓ 1 of 1 mcp servers initialized.\n\n🤖 You are chatting with " + model + "\n\n"
	}
	return "\x1b[32mWelcome to Amazon Q!\x1b[0m\n\n╭──────── Did you know? ────────╮\n│ Use /editor to write a prompt │\n╰───────────────────────────────╯\n\n" +
		"/help all commands  •  ctrl + j new lines  •  ctrl + s fuzzy search\n\n🤖 You are chatting with " + model + "\n\n"
}

// listModels answers kiro's `chat --list-models [--format json]`.
func listModels(c chatArgs, models []string) int {
	if code := listWait(); code != 0 {
		return code
	}
	if c.format == "json" || c.format == "json-pretty" {
		type model struct {
			ID          string `json:"model_id"`
			Name        string `json:"model_name"`
			Description string `json:"description"`
		}
		v := struct {
			Models  []model `json:"models"`
			Default string  `json:"default_model"`
		}{Default: models[0]}
		for _, m := range models {
			v.Models = append(v.Models, model{ID: m, Name: m, Description: "the " + m + " model"})
		}
		data, _ := json.Marshal(v)
		fmt.Println(string(data))
		return 0
	}
	for i, m := range models {
		mark := " "
		if i == 0 {
			mark = "*"
		}
		fmt.Printf("%s %s\n", mark, m)
	}
	return 0
}

// flavourWhoami is `whoami [--format json]`: on stdout, exit 1 when logged out.
func flavourWhoami(flavour string, args []string) int {
	asJSON := slices.Contains(args, "json") || slices.Contains(args, "--format=json")
	switch {
	case flavour == "kiro" && os.Getenv("KIRO_API_KEY") != "":
		if asJSON {
			fmt.Println(`{"accountType":"ApiKey"}`)
		} else {
			fmt.Println("Authenticated with API key")
		}
		return 0
	case os.Getenv("FAKEQ_LOGGED_OUT") != "":
		if asJSON {
			fmt.Println("null")
		} else {
			fmt.Println("Not logged in")
		}
		return 1
	case os.Getenv("FAKEQ_WHOAMI") == "idc":
		if asJSON {
			fmt.Println(`{"accountType":"IamIdentityCenter","region":"us-east-1","startUrl":"https://example.awsapps.com/start"}`)
		} else {
			fmt.Println("Logged in with IAM Identity Center (https://example.awsapps.com/start)")
		}
		return 0
	}
	if asJSON {
		fmt.Println(`{"accountType":"BuilderId","region":"us-east-1"}`)
	} else {
		fmt.Println("Logged in with Builder ID")
	}
	return 0
}
