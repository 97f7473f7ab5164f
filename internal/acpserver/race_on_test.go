//go:build race

package acpserver

// raceBuild says the tests run under the race detector (make race).
const raceBuild = true
