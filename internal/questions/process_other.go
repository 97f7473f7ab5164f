//go:build !unix

package questions

// processAlive cannot tell on this platform, so every process is taken as alive: sessions are then
// only abandoned by a cancelled call, never by a guess.
func processAlive(int) bool { return true }
