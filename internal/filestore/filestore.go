// Package filestore holds the two primitives every on-disk write in qkit goes through: an atomic
// replace (temp file in the same directory, fsync, rename) and an advisory lock on a sibling ".lock"
// file. Together they make a read-modify-write safe against concurrent processes and against a crash
// at any instant: a reader sees the old file or the new one, never a torn one.
package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// WriteAtomic replaces path with data. The directory is created (with dirPerm) when missing. When
// path is a symbolic link (a config.yaml kept in a dotfiles repository), the file it points to is
// replaced and the link kept. A path that is, or leads to, something other than a regular file (a
// device, a FIFO, a descriptor in /proc) is refused: replacing it with a file would break what it
// is (as root, /dev/null). A file a person names for output goes through WriteNamed instead.
func WriteAtomic(path string, data []byte, perm, dirPerm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("write %s: %w", path, ErrNotRegular)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return ReplaceAtomic(path, data, perm, dirPerm)
}

// ReplaceAtomic is WriteAtomic without following a link: whatever is at path (a symbolic link, a
// FIFO, a file) is replaced by the new file. For files in a folder only qkit writes, where a link
// or device put there must not make qkit write elsewhere or fail to write at all.
func ReplaceAtomic(path string, data []byte, perm, dirPerm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// CreateTemp opens with O_CREATE|O_EXCL: it never follows a link planted at the temporary name.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return commit(tmp, path, data, perm, true)
}

// commit writes data to tmp, a new file beside path, sets its mode to perm when chmod is set,
// makes it durable and renames it over path. tmp is closed, and removed unless it became path.
func commit(tmp *os.File, path string, data []byte, perm fs.FileMode, chmod bool) error {
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if chmod {
		if err := tmp.Chmod(perm); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			_ = tmp.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	committed = true
	syncDir(filepath.Dir(path))
	return nil
}

// Lock is an exclusive advisory lock held on a file beside the one it protects.
type Lock struct {
	f *os.File
}

// LockFor takes an exclusive lock on path+".lock", blocking until it is free. The lock is released by
// Unlock or, should the process die, by the kernel. A change made for a command that a signal can
// stop takes the lock with LockForContext.
func LockFor(path string, dirPerm fs.FileMode) (*Lock, error) {
	return LockForContext(context.Background(), path, dirPerm)
}

// LockForContext is LockFor that stops waiting when ctx ends: it then returns ctx's error (its
// cause, a signal, when it has one) and holds nothing. The wait is a series of attempts that never
// block, further apart the longer the lock is held (up to lockRetryMax): no thread is left blocked
// in the kernel on a lock nobody wants any more.
func LockForContext(ctx context.Context, path string, dirPerm fs.FileMode) (*Lock, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	name := path + ".lock"
	f, err := OpenNoFollow(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	wait := lockRetryMin
	for {
		ok, err := tryLockFile(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &Lock{f: f}, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctxErr(ctx))
		case <-timer.C:
		}
		wait = min(2*wait, lockRetryMax)
	}
}

// How long LockForContext waits between two attempts: lockRetryMin after the first, doubling up
// to lockRetryMax. The longest wait is how late a freed lock may be noticed; it is short beside a
// person's reaction and long enough that a lock held for minutes costs next to nothing.
const (
	lockRetryMin = time.Millisecond
	lockRetryMax = 50 * time.Millisecond
)

// ctxErr is ctx's cause when it has ended (the signal that stopped qkit, say), else nil.
func ctxErr(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// Unlock releases the lock. It is safe to call on a nil Lock.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}

// Update runs fn under the lock for path: fn gets the current content (nil when the file does not exist)
// and returns the new content, which is written atomically. Returning ErrNoChange leaves the file alone.
// The current content is read as ReadState reads it: a FIFO, a device or a file over MaxStateSize
// is an error, and nothing is written.
func Update(path string, perm, dirPerm fs.FileMode, fn func(old []byte) ([]byte, error)) error {
	return UpdateContext(context.Background(), path, perm, dirPerm, fn)
}

// UpdateContext is Update for a change that ctx can call off: the wait for the lock ends with ctx,
// and ctx is looked at again once fn has run, just before the write, so that a change called off
// while it waited is never made after all. Either way the error wraps ctx's cause and the file is
// left as it was.
func UpdateContext(ctx context.Context, path string, perm, dirPerm fs.FileMode, fn func(old []byte) ([]byte, error)) error {
	lock, err := LockForContext(ctx, path, dirPerm)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	old, err := ReadState(path)
	switch {
	case errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge):
		return err
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read %s: %w", path, err)
	}
	data, err := fn(old)
	if errors.Is(err, ErrNoChange) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("write %s: %w; it was left unchanged", path, err)
	}
	return WriteAtomic(path, data, perm, dirPerm)
}

// MaxStateSize is the most ReadState reads of one of qkit's own files (config.yaml, a context
// profile, a cache): each holds a few kilobytes at most, so a larger one is damage or not a file
// qkit wrote, and reading it whole (a link to /dev/zero, say) must not exhaust memory.
const MaxStateSize = 1 << 20

// ReadState reads one of qkit's own files with ReadRegular and MaxStateSize. Its refusal names the
// file and says what it is ("config.yaml is a FIFO, not a regular file", "is larger than 1 MiB")
// and wraps ErrNotRegular or ErrTooLarge; other errors are os.Open's (fs.ErrNotExist for a missing
// file).
func ReadState(path string) ([]byte, error) {
	data, err := ReadRegular(path, MaxStateSize)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, ErrNotRegular):
		return nil, &stateError{path + " is " + describeKind(path) + ", not a regular file", ErrNotRegular}
	case errors.Is(err, ErrTooLarge):
		return nil, &stateError{fmt.Sprintf("%s is larger than %d MiB, more than any file qkit writes", path, MaxStateSize>>20), ErrTooLarge}
	}
	return nil, err
}

// describeKind says what path (through links) is, for an error: "a FIFO", "a device", "a folder".
func describeKind(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "not readable"
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// stateError is ReadState's refusal: its message says it all, and it wraps ErrNotRegular or
// ErrTooLarge for errors.Is.
type stateError struct {
	msg string
	err error
}

func (e *stateError) Error() string { return e.msg }
func (e *stateError) Unwrap() error { return e.err }

// ErrNotRegular is returned by OpenRegular for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by ReadRegular for a file over its limit.
var ErrTooLarge = errors.New("larger than the limit")

// ReadRegular reads the whole of name when it is a regular file of at most limit bytes. Like
// OpenRegular it never blocks on a FIFO or a device (nor on a link to one), and it never reads
// more than limit+1 bytes, whatever the file holds.
func ReadRegular(name string, limit int64) ([]byte, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
	}
	return data, nil
}

// checkRegular returns f when it is a regular file, and closes it otherwise.
func checkRegular(f *os.File) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: ErrNotRegular}
	}
	return f, nil
}

// ErrNoChange, returned by an Update function, means there is nothing to write.
var ErrNoChange = errors.New("no change")
