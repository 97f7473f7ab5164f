// Package lifecycle is what every questions store shares, written once: each step of a set's
// life as a Change run under the store's own guard (a file lock, or a key's revision), the rules of
// detached sets, the shared watcher hub, the wait clocks, the watches on claiming terminals, and the
// Ask flow with its background cleanup. Only the questions packages can import it, so the core's
// API stays the types and errors callers need.
package lifecycle
