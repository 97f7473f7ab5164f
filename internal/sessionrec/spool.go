package sessionrec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// SpoolDirName is the spool's folder beside the session store's file (in qkit's data folder).
const SpoolDirName = "sessions-spool"

// SpoolDir is the spool of the store whose file is in dataDir.
func SpoolDir(dataDir string) string { return filepath.Join(dataDir, SpoolDirName) }

// spoolVersion is the format of a spool file; a store that meets a newer one leaves it be.
const spoolVersion = 1

// Spooled is one spool file: an exchange and when it happened (the times it is stored with).
type Spooled struct {
	Version  int       `json:"version"`
	At       time.Time `json:"at"`
	Exchange Exchange  `json:"exchange"`
}

// Spool records exchanges as files in Dir, one per exchange, for the session store to take in
// (Store.Ingest in internal/sessions) the next time any qkit opens it: `sessions list` then shows
// them. Each file is written whole under a temporary name and renamed, so the store never reads
// half of one; names sort in the order the exchanges were recorded.
type Spool struct{ Dir string }

// Record spools ex and returns the id its session will have: ex.ID; else the one the store gives
// a new session of the agent session (SessionIDFor: the agent's id when it is safe to print; one
// already recorded with it is continued by the store); else a new id, set in the spooled exchange
// so the store creates the session under it.
func (s Spool) Record(_ context.Context, ex Exchange, now time.Time) (string, error) {
	id := ex.ID
	switch {
	case id != "":
	case ex.AgentSession != "":
		id = SessionIDFor(ex.AgentSession)
	case ex.Continue:
		// The store finds the latest session of the origin in the folder as it takes the file in.
	default:
		id = uuid.NewString()
		ex.ID = id
	}
	data, err := json.Marshal(Spooled{Version: spoolVersion, At: now, Exchange: ex})
	if err != nil {
		return "", fmt.Errorf("spooling the session: %w", err)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("spooling the session: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("spooling the session: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes what a failure left
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync() // on disk before the name: a crash leaves the old state or the whole file
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("spooling the session: %w", err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := fmt.Sprintf("%020d-%s.json", now.UnixNano(), hex.EncodeToString(r[:]))
	if err := os.Rename(tmp.Name(), filepath.Join(s.Dir, name)); err != nil {
		return "", fmt.Errorf("spooling the session: %w", err)
	}
	return id, nil
}

// Continue and Messages find nothing: a spool only records (a front end that continues a stored
// session opens the store itself).
func (Spool) Continue(context.Context, string) (Continuation, error) {
	return Continuation{}, ErrSessionNotFound
}

// Messages: see Continue.
func (Spool) Messages(context.Context, string) ([]Message, error) { return nil, ErrSessionNotFound }

// SpoolFile is one file of the spool as ReadSpool found it.
type SpoolFile struct {
	Path string
	Spooled
	// Err is why the file could not be taken in: it is left in place for a later try (a read
	// that failed, a newer format), or, when Broken, set aside.
	Err error
	// Broken: the file is not a spool file (it does not decode); no later try can read it.
	Broken bool
}

// ReadSpool reads the spool's files in the order they were recorded (none when dir does not
// exist). Temporary files (being written) are skipped.
func ReadSpool(dir string) ([]SpoolFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]SpoolFile, 0, len(names))
	for _, n := range names {
		f := SpoolFile{Path: filepath.Join(dir, n)}
		data, err := os.ReadFile(f.Path)
		if err == nil {
			err = json.Unmarshal(data, &f.Spooled)
			f.Broken = err != nil
		}
		if err == nil && f.Version != spoolVersion {
			err = fmt.Errorf("spool format %d, not %d", f.Version, spoolVersion)
		}
		f.Err = err
		out = append(out, f)
	}
	return out, nil
}
