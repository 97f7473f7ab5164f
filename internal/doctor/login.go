package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"

	"github.com/qkit-cli/qkit/internal/agent"
)

// LogIn runs `<command> login` for a person at a terminal (`qkit doctor --login`, which an editor
// runs through the ACP terminal auth method qkit advertises), then asks whoami whether it worked.
// The login reads the person's terminal (a device code, a browser hand-off), so, unlike every other
// process qkit starts, it runs in qkit's own process group: a process group of its own would be
// stopped as soon as it read the terminal. Ctrl-C reaches it as it reaches qkit; ctx ending kills
// it. A login that fails is an error with its exit status; a login after which whoami still says
// nobody is logged in is an *agent.LoginError.
func LogIn(ctx context.Context, command string, in io.Reader, out, errOut io.Writer) (agent.Login, error) {
	c := exec.CommandContext(ctx, command, "login")
	c.Stdin, c.Stdout, c.Stderr = in, out, errOut
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return agent.Login{}, &agent.MissingCommandError{Command: command}
	case ctx.Err() != nil:
		return agent.Login{}, ctx.Err()
	case errors.As(err, &ee):
		return agent.Login{}, fmt.Errorf("%s login failed (exit status %d)", filepath.Base(command), ee.ExitCode())
	case err != nil:
		return agent.Login{}, agent.StartError(command, err)
	}
	return agent.CheckLogin(ctx, command, nil)
}
