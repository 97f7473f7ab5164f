package acpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/qkit-cli/qkit/internal/filestore"
	"github.com/qkit-cli/qkit/internal/procgroup"
	"github.com/qkit-cli/qkit/internal/termtext"
)

// MaxFileRead is the largest file DirFiles hands the agent: an answer must fit on one line the
// agent's SDK reads (10 MiB for acp-go-sdk).
const MaxFileRead = 8 << 20

// OutsideError is the agent asking for a path outside the working directory; it is refused.
type OutsideError struct {
	Op   string // read, write, terminal cwd
	Path string
	Root string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("refused to %s %s: it is outside the working directory %s", e.Op, shownPath(e.Path), shownPath(e.Root))
}

// shownPath is p for a message on a terminal: as it is, or Go-quoted when it holds what a
// terminal would act on (the agent chooses the paths it asks for).
func shownPath(p string) string {
	if termtext.StripString(p) == p {
		return p
	}
	return strconv.Quote(p)
}

// Refusals collects what was refused during a run (DirFiles' and DirTerminals' OnRefused); safe
// for concurrent use. Its Err is the run's failure when anything was refused.
type Refusals struct {
	mu   sync.Mutex
	list []*OutsideError
}

// Add records a refusal.
func (r *Refusals) Add(e *OutsideError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, e)
}

// Paths are the refused paths, in order.
func (r *Refusals) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	paths := make([]string, 0, len(r.list))
	for _, e := range r.list {
		paths = append(paths, e.Path)
	}
	return paths
}

// Err is a *RefusedError listing the refusals, or nil when nothing was refused.
func (r *Refusals) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == 0 {
		return nil
	}
	return &RefusedError{Refused: slices.Clone(r.list)}
}

// RefusedError is a run in which the agent asked for paths outside the working directory: each
// was refused, and the run fails even when the agent carried on without them, since it could not
// do what it set out to.
type RefusedError struct {
	Refused []*OutsideError
}

func (e *RefusedError) Error() string {
	what := make([]string, 0, len(e.Refused))
	for _, r := range e.Refused {
		what = append(what, r.Op+" "+shownPath(r.Path))
	}
	root := shownPath(e.Refused[0].Root)
	if len(e.Refused) == 1 {
		return fmt.Sprintf("the agent asked for a path outside the working directory %s, which was refused: %s", root, what[0])
	}
	return fmt.Sprintf("the agent asked for %d paths outside the working directory %s, which were refused: %s",
		len(e.Refused), root, strings.Join(what, ", "))
}

// refusal is how a refused request is answered to the agent: -32602 with the reason as the
// message (the TypeScript SDK, which kiro's V3 engine is built on, shows an agent only the
// message) and as data.details (where the Go SDK's errors put it).
func refusal(err error) error {
	return &acp.RequestError{Code: -32602, Message: err.Error(), Data: map[string]any{"details": err.Error()}}
}

// Within reports whether path lies inside root (the session's working directory, absolute) once
// symbolic links are resolved; for a path that does not exist yet, its nearest existing parent
// decides. It returns the path to use: cleaned, and absolute.
//
// ACP's schema says the path of fs/read_text_file and fs/write_text_file, and a terminal's cwd,
// is an absolute path; an agent that sends a relative one anyway can only mean the session's
// folder (its cwd, which session/new gives as absolute), so the path is resolved against root
// first and then held to root like any other: "../x" is still outside.
func Within(root, path string) (string, bool) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return path, false // root itself was relative: nothing to hold the path to
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return path, false
	}
	real := path
	var rest []string
	for {
		r, err := filepath.EvalSymlinks(real)
		if err == nil {
			real = filepath.Join(append([]string{r}, rest...)...)
			break
		}
		parent := filepath.Dir(real)
		if parent == real {
			return path, false
		}
		rest = append([]string{filepath.Base(real)}, rest...)
		real = parent
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path, false
	}
	return path, true
}

// DirFiles serves fs/read_text_file and fs/write_text_file inside Root only: a path outside it
// (after symbolic links) is refused, reported to OnRefused and answered with an error.
type DirFiles struct {
	Root      string
	OnRefused func(*OutsideError)
}

func (d *DirFiles) check(op, path string) (string, error) {
	p, ok := Within(d.Root, path)
	if !ok {
		e := &OutsideError{Op: op, Path: path, Root: d.Root}
		if d.OnRefused != nil {
			d.OnRefused(e)
		}
		return "", refusal(e)
	}
	return p, nil
}

// ReadTextFile reads the file, or Limit lines of it from Line (1-based).
func (d *DirFiles) ReadTextFile(_ context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	p, err := d.check("read", req.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	f, err := filestore.OpenRegular(p)
	if err != nil {
		return acp.ReadTextFileResponse{}, fileError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileRead+1))
	if err != nil {
		return acp.ReadTextFileResponse{}, fileError(err)
	}
	if len(data) > MaxFileRead {
		return acp.ReadTextFileResponse{}, refusal(fmt.Errorf("%s is larger than %d MiB: read it in parts (line, limit)", req.Path, MaxFileRead>>20))
	}
	text := string(data)
	if req.Line != nil || req.Limit != nil {
		text = lines(text, req.Line, req.Limit)
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

func lines(text string, line, limit *int) string {
	start := 0
	if line != nil && *line > 1 {
		start = *line - 1
	}
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), MaxFileRead+1)
	for i, n := 0, 0; sc.Scan(); i++ {
		if i < start {
			continue
		}
		if limit != nil && n >= *limit {
			break
		}
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		n++
	}
	return b.String()
}

// WriteTextFile writes the file atomically, creating its folder when missing.
func (d *DirFiles) WriteTextFile(_ context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	p, err := d.check("write", req.Path)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(p); err == nil {
		if !fi.Mode().IsRegular() {
			return acp.WriteTextFileResponse{}, refusal(fmt.Errorf("%s is not a regular file", req.Path))
		}
		perm = fi.Mode().Perm()
	}
	if err := filestore.WriteAtomic(p, []byte(req.Content), perm, 0o755); err != nil {
		return acp.WriteTextFileResponse{}, fileError(err)
	}
	return acp.WriteTextFileResponse{}, nil
}

func fileError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"details": err.Error()}}
	}
	return &acp.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"details": err.Error()}}
}

// DirTerminals serves terminal/* for commands run inside Root: a cwd outside it is refused. Each
// command runs in its own process group; Close ends those still running.
type DirTerminals struct {
	Root      string
	Logger    *slog.Logger
	OnRefused func(*OutsideError)

	mu    sync.Mutex
	next  int
	terms map[string]*terminal
}

type terminal struct {
	proc   *procgroup.Proc
	out    *limitedOutput
	done   chan struct{} // closed when the command has exited and its output is read
	status acp.TerminalExitStatus
}

// limitedOutput keeps the last limit bytes of a command's output (ACP truncates from the start).
type limitedOutput struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

func (o *limitedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if o.limit > 0 && len(o.buf) > o.limit {
		cut := len(o.buf) - o.limit
		for cut < len(o.buf) && o.buf[cut]&0xC0 == 0x80 { // not inside a UTF-8 character
			cut++
		}
		o.buf = append(o.buf[:0], o.buf[cut:]...)
		o.truncated = true
	}
	return len(p), nil
}

func (o *limitedOutput) get() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf), o.truncated
}

// DefaultTerminalOutput is kept of a terminal's output when the agent names no limit.
const DefaultTerminalOutput = 1 << 20

// CreateTerminal starts the command.
func (d *DirTerminals) CreateTerminal(_ context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	dir := d.Root
	if req.Cwd != nil && *req.Cwd != "" {
		p, ok := Within(d.Root, *req.Cwd)
		if !ok {
			e := &OutsideError{Op: "run a command in", Path: *req.Cwd, Root: d.Root}
			if d.OnRefused != nil {
				d.OnRefused(e)
			}
			return acp.CreateTerminalResponse{}, refusal(e)
		}
		dir = p
	}
	limit := DefaultTerminalOutput
	if req.OutputByteLimit != nil && *req.OutputByteLimit > 0 {
		limit = min(*req.OutputByteLimit, DefaultTerminalOutput)
	}
	t, err := startTerminal(req, dir, limit)
	if err != nil {
		return acp.CreateTerminalResponse{}, fileError(fmt.Errorf("terminal: %w", err))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.terms == nil {
		d.terms = map[string]*terminal{}
	}
	d.next++
	id := "term-" + strconv.Itoa(d.next)
	d.terms[id] = t
	if d.Logger != nil {
		d.Logger.Info("terminal started for the agent", "id", id, "command", req.Command, "dir", dir)
	}
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func (d *DirTerminals) get(id string) (*terminal, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.terms[id]
	if t == nil {
		return nil, &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"details": "no terminal " + id}}
	}
	return t, nil
}

// TerminalOutput returns the output so far and, once the command has exited, its status.
func (d *DirTerminals) TerminalOutput(_ context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	t, err := d.get(req.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	resp := acp.TerminalOutputResponse{}
	select {
	case <-t.done:
		st := t.status
		resp.ExitStatus = &st
	default:
	}
	resp.Output, resp.Truncated = t.out.get()
	return resp, nil
}

// WaitForTerminalExit waits for the command to exit.
func (d *DirTerminals) WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	t, err := d.get(req.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
		return acp.WaitForTerminalExitResponse{ExitCode: t.status.ExitCode, Signal: t.status.Signal}, nil
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
}

// KillTerminal ends the command (its process group), keeping its output.
func (d *DirTerminals) KillTerminal(_ context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	t, err := d.get(req.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	t.stop()
	return acp.KillTerminalResponse{}, nil
}

// ReleaseTerminal ends the command if it still runs and forgets it.
func (d *DirTerminals) ReleaseTerminal(_ context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	t, err := d.get(req.TerminalId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	t.stop()
	d.mu.Lock()
	delete(d.terms, req.TerminalId)
	d.mu.Unlock()
	return acp.ReleaseTerminalResponse{}, nil
}

// startTerminal runs req's command in dir, in a process group of its own, its output (stdout and
// stderr as written) kept up to limit bytes. Its exit status, once it has exited and its output is
// read, names the signal that ended it ("SIGTERM", no exit code) as ACP's TerminalExitStatus has it.
func startTerminal(req acp.CreateTerminalRequest, dir string, limit int) (*terminal, error) {
	env := os.Environ()
	for _, e := range req.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	t := &terminal{out: &limitedOutput{limit: limit}, done: make(chan struct{})}
	p, err := procgroup.Start(req.Command, req.Args, procgroup.Options{Dir: dir, Env: env, Stdout: procgroup.Copy(t.out), MergeStderr: true, Grace: time.Second})
	if err != nil {
		return nil, err
	}
	t.proc = p
	go func() {
		exit := p.Wait(context.Background()) // a helper holding the output cannot keep it from ending
		if exit.Signal != "" {
			t.status.Signal = &exit.Signal
		} else {
			t.status.ExitCode = &exit.Code
		}
		close(t.done)
	}()
	return t, nil
}

// stop ends the command's process group (SIGTERM, then SIGKILL after a second); it returns once
// the command has exited.
func (t *terminal) stop() { t.proc.Stop() }

// Close ends every command still running.
func (d *DirTerminals) Close() {
	d.mu.Lock()
	terms := d.terms
	d.terms = nil
	d.mu.Unlock()
	for _, t := range terms {
		t.stop()
	}
}
