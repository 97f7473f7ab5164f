// Package natstest runs a real NATS server with JetStream for the tests of the NATS questions store
// (internal/questions, internal/mcpserver, internal/doctor and the testscripts). The server is the
// nats-server executable, a tool dependency in go.mod, run as a process of its own: no package of
// this module imports the server's Go package, so neither the qkit binary nor any test binary
// compiles or links it (TestTheBinaryDoesNotLinkTheNATSServer and TestNoPackageImportsTheNATSServer
// check).
//
// The executable is $QKIT_NATS_SERVER when it is set (make test builds it once into bin/);
// otherwise `go tool -n nats-server` builds it into the build cache, once per test process, and
// names it.
package natstest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvServer is the environment variable that names a nats-server executable to run instead of
// building one.
const EnvServer = "QKIT_NATS_SERVER"

// Options say how to run a server. The zero value is a server without JetStream and without
// authorization on a free port.
type Options struct {
	// Port is the port on 127.0.0.1; 0 means a free one, chosen by the server.
	Port int
	// JetStream turns JetStream on, with its data in StoreDir: a Restart with the same StoreDir
	// keeps the buckets.
	JetStream bool
	StoreDir  string
	// Token is the authorization token clients must present; "" requires none.
	Token string
	// MaxPayload is the largest message the server takes, in bytes; 0 means the server's default.
	MaxPayload int
	// Operator, when set, runs the server in operator JWT mode.
	Operator *Operator
	// TLS, when set, makes the server require TLS of its clients.
	TLS *TLS
}

// Operator is operator JWT mode: the server trusts the operator, and knows the accounts from a
// memory resolver preloaded with their JWTs.
type Operator struct {
	// JWT is the operator's signed JWT.
	JWT string
	// SystemAccount is the system account's public key; its JWT must be among Accounts.
	SystemAccount string
	// Accounts maps each account's public key to its signed JWT.
	Accounts map[string]string
}

// TLS is the server's TLS, from PEM files.
type TLS struct {
	CertFile, KeyFile string
	// CAFile holds the CA that client certificates must be signed by.
	CAFile string
	// Verify requires a client certificate, verified against CAFile.
	Verify bool
	// Timeout is how long the server gives a client for the handshake; 0 means its default.
	Timeout time.Duration
}

// Server is one nats-server process, started by Start. Its data lives in the options' StoreDir, so
// a Restart on the same port keeps the buckets.
type Server struct {
	mu    sync.Mutex
	opts  Options
	port  int
	proc  *proc // nil while stopped
	tries int   // how many times a start is tried when the port is taken
}

// Start starts a server with opts on 127.0.0.1; it is ready for connections when Start returns.
// The caller stops it (Stop) before the test ends.
func Start(opts Options) (*Server, error) {
	s := &Server{opts: opts, port: opts.Port, tries: startTries}
	return s, s.start()
}

// startTries is how many times a start is tried when the port is taken.
const startTries = 50

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("nats-server: already running")
	}
	bin, err := serverBinary()
	if err != nil {
		return err
	}
	// A restart on the same port can find it taken for a moment: a client reconnecting to the
	// stopped server may be given that very port as its own and connect to itself. The server then
	// exits saying it cannot listen, and is tried again. Otherwise it gets all the time a loaded
	// machine needs (JetStream's recovery of the store can be slow): a short wait here would give
	// up on a server that was about to be ready, and fail every try on a busy machine.
	for try := 1; ; try++ {
		p, err := s.run(bin)
		if err == nil {
			s.proc, s.port = p, p.port
			return nil
		}
		if !errors.Is(err, errPortTaken) || s.port == 0 || try >= s.tries {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run writes the configuration into a folder of its own, starts the server on it and waits until
// it is ready; the folder is removed once the server has read it.
func (s *Server) run(bin string) (*proc, error) {
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	conf, err := config(s.opts, s.port, dir)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(file, conf, 0o600); err != nil {
		return nil, err
	}
	return startProc(bin, file)
}

// Stop stops the server and waits until its process has exited (idempotent).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
}

// Restart stops the server and starts it again on the same port with the same data.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Up starts a stopped server again on the same port with the same data; it fails when the server
// runs.
func (s *Server) Up() error { return s.start() }

// Port is the port the server listens on (kept across restarts).
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// URL is the server's nats:// URL on loopback.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.Port()) }

// config is the server's configuration file, in nats-server's own format, for a server on port
// (0: a free one). Files the configuration refers to are written into dir.
func config(o Options, port int, dir string) ([]byte, error) {
	var b bytes.Buffer
	var bad error
	q := func(v string) string {
		s, err := quote(v)
		if err != nil && bad == nil {
			bad = err
		}
		return s
	}
	if port == 0 {
		port = -1 // the server's word for a free port
	}
	fmt.Fprintf(&b, "host: %s\nport: %d\n", q("127.0.0.1"), port)
	if o.JetStream {
		fmt.Fprintf(&b, "jetstream {\n  store_dir: %s\n}\n", q(o.StoreDir))
	}
	if o.Token != "" {
		fmt.Fprintf(&b, "authorization {\n  token: %s\n}\n", q(o.Token))
	}
	if o.MaxPayload > 0 {
		fmt.Fprintf(&b, "max_payload: %d\n", o.MaxPayload)
	}
	if op := o.Operator; op != nil {
		file := filepath.Join(dir, "operator.jwt")
		if err := os.WriteFile(file, []byte(op.JWT), 0o600); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload {\n", q(file), q(op.SystemAccount))
		for key, jwt := range op.Accounts {
			fmt.Fprintf(&b, "  %s: %s\n", q(key), q(jwt))
		}
		b.WriteString("}\n")
	}
	if t := o.TLS; t != nil {
		fmt.Fprintf(&b, "tls {\n  cert_file: %s\n  key_file: %s\n", q(t.CertFile), q(t.KeyFile))
		if t.CAFile != "" {
			fmt.Fprintf(&b, "  ca_file: %s\n", q(t.CAFile))
		}
		fmt.Fprintf(&b, "  verify: %t\n", t.Verify)
		if t.Timeout > 0 {
			fmt.Fprintf(&b, "  timeout: %s\n", strconv.FormatFloat(t.Timeout.Seconds(), 'f', -1, 64))
		}
		b.WriteString("}\n")
	}
	if bad != nil {
		return nil, bad
	}
	return b.Bytes(), nil
}

// quote is v as a quoted string of nats-server's configuration format, whose only escapes are
// \\, \", \t, \n, \r and \xXX; a control character is refused rather than guessed at.
func quote(v string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ' || r == 0x7f:
			return "", fmt.Errorf("nats-server configuration: %q has a control character", v)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// The executable, found or built once per test process.
var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// The test process's environment and folder as it started, before a test could change them
// (t.Setenv, t.Chdir): the server is built with them, in the module and with its build cache, even
// when the first Start comes from a test that moved HOME or the working folder.
var (
	startEnv    = os.Environ()
	startDir, _ = os.Getwd()
)

// serverBinary is the nats-server executable to run.
func serverBinary() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("nats-server: $%s: %w", EnvServer, err)
		}
		return p, nil
	}
	binaryOnce.Do(func() {
		// go tool -n builds the tool into the build cache when it is not there and prints the
		// cached executable: one link per cache, shared by every test process. Without cgo, so
		// the race pass (which turns cgo on) finds the same executable as the others.
		cmd := exec.Command("go", "tool", "-n", "nats-server")
		cmd.Env, cmd.Dir = append(slices.Clip(startEnv), "CGO_ENABLED=0"), startDir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		binaryPath = strings.TrimSpace(string(out))
		if err == nil && binaryPath == "" {
			err = errors.New("it printed no path")
		}
		if err == nil {
			_, err = os.Stat(binaryPath)
		}
		if err != nil {
			binaryErr = fmt.Errorf("nats-server: cannot build it with `go tool -n nats-server` (set $%s to a nats-server executable instead): %v\n%s",
				EnvServer, err, strings.TrimSpace(stderr.String()))
		}
	})
	return binaryPath, binaryErr
}

// errPortTaken is a start that failed because the port was taken.
var errPortTaken = errors.New("the port is taken")

// startTimeout is how long a server has to become ready.
const startTimeout = time.Minute

// stopGrace is how long a server has to shut down after SIGTERM before it is killed.
const stopGrace = 30 * time.Second

// proc is a running nats-server process.
type proc struct {
	cmd    *exec.Cmd
	log    *logWatch
	exited chan struct{} // closed once the process has exited and its log is read
	port   int
}

// startProc runs bin on the configuration file and waits until the server is ready, has exited,
// or startTimeout has passed; in the last two cases nothing is left running and the error carries
// the server's log.
func startProc(bin, conf string) (*proc, error) {
	p := &proc{log: newLogWatch(), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "-c", conf)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	setDeathSignal(p.cmd)
	started := make(chan error, 1)
	go func() {
		// On Linux the server gets SIGKILL when the thread that started it exits (so that it cannot
		// outlive a test process that dies without stopping it): this thread is held until the
		// server has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-p.log.ready:
		p.port = p.log.listenPort()
		if p.port != 0 {
			return p, nil
		}
		p.stop()
		return nil, fmt.Errorf("nats-server: ready, but its log does not say its port:\n%s", p.log.text())
	case <-p.exited:
		log := p.log.text()
		if strings.Contains(log, "Error listening on port") {
			return nil, fmt.Errorf("nats-server: %w:\n%s", errPortTaken, log)
		}
		return nil, fmt.Errorf("nats-server %s:\n%s", p.cmd.ProcessState, log)
	case <-t.C:
		p.stop()
		return nil, fmt.Errorf("nats-server: not ready for connections after %s:\n%s", startTimeout, p.log.text())
	}
}

// stop ends the process: SIGTERM (the server shuts down cleanly, writing out JetStream's data),
// then SIGKILL after stopGrace; it returns once the process has exited.
func (p *proc) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// maxLog is how much of the server's log is kept for an error message (the start of it: the
// server stops logging much once it is ready).
const maxLog = 64 << 10

// logWatch reads the server's log: it keeps the start for error messages, notes the port the
// server says it listens on, and closes ready when it says it is ready.
type logWatch struct {
	mu      sync.Mutex
	buf     []byte // the log, up to maxLog
	partial []byte // the line being written
	port    int
	ready   chan struct{}
	isReady bool
}

func newLogWatch() *logWatch { return &logWatch{ready: make(chan struct{})} }

// The server's log lines that say where it listens and that it is ready.
const (
	listeningLine = "Listening for client connections on "
	readyLine     = "Server is ready"
)

func (l *logWatch) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxLog - len(l.buf); room > 0 {
		l.buf = append(l.buf, b[:min(room, len(b))]...)
	}
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxLog { // no line is that long: drop it rather than grow
		l.partial = l.partial[:0]
	}
	return len(b), nil
}

func (l *logWatch) line(s string) {
	if i := strings.Index(s, listeningLine); i >= 0 {
		if _, port, err := net.SplitHostPort(strings.TrimSpace(s[i+len(listeningLine):])); err == nil {
			l.port, _ = strconv.Atoi(port)
		}
	}
	if strings.Contains(s, readyLine) && !l.isReady {
		l.isReady = true
		close(l.ready)
	}
}

func (l *logWatch) listenPort() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.port
}

func (l *logWatch) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(string(l.buf))
}
