package questionsweb

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"math"
	"sync"
)

// maxSessions bounds the browsers one server remembers. Opening the link once more than this
// forgets the browser that was used least recently; it opens the link again to get back in.
const maxSessions = 64

// sessions are the browsers that opened the link. Browsers do not keep cookies apart by port, so
// every other web server on this host that the browser visits is sent the page's cookie: the cookie
// therefore holds a random value of its own, never the token, and that value is good for nothing but
// this cookie on this server. The table keeps a hash of each value (a lookup compares hashes, not the
// secret), the value the forms of that browser must carry, and when it was last used (a count of
// uses, so the order is exact whatever the clock).
type sessions struct {
	mu   sync.Mutex
	uses uint64
	all  map[[sha256.Size]byte]*visitor
}

type visitor struct {
	form string // the form value (csrf field) of this browser's pages
	used uint64
}

func newSessions() *sessions {
	return &sessions{all: map[[sha256.Size]byte]*visitor{}}
}

// open starts a session for a browser that presented the token: the value for its cookie.
func (s *sessions) open() (string, error) {
	cookie, err := randomHex()
	if err != nil {
		return "", err
	}
	form, err := randomHex()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) >= maxSessions {
		var oldest [sha256.Size]byte
		at := uint64(math.MaxUint64)
		for k, v := range s.all {
			if v.used < at {
				oldest, at = k, v.used
			}
		}
		delete(s.all, oldest)
	}
	s.uses++
	s.all[sha256.Sum256([]byte(cookie))] = &visitor{form: form, used: s.uses}
	return cookie, nil
}

// form returns the form value of the session a cookie names, if it is one.
func (s *sessions) form(cookie string) (string, bool) {
	if cookie == "" {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.all[sha256.Sum256([]byte(cookie))]
	if !ok {
		return "", false
	}
	s.uses++
	b.used = s.uses
	return b.form, true
}

func randomHex() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// equal compares a presented secret with an expected one in constant time; empty never matches.
func equal(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
