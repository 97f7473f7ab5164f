package procgroup

import "syscall"

// setDeathSignal asks the kernel to SIGKILL the leader when qkit dies: the backstop for a qkit
// that is SIGKILLed or OOM-killed, which runs none of its own stops. SIGKILL rather than SIGTERM:
// nobody is left to follow a TERM the agent ignores with a KILL.
//
// What it covers: the leader only (the agent, a terminal's shell, a bridged MCP server). An ACP
// agent's stdin is a pipe from qkit, so its end of input comes with qkit's death anyway; the
// signal matters for a leader that does not read stdin or ignores its end (the chat run, a
// TERM-ignoring agent). What it cannot cover: the leader's own children. Once the leader is
// killed they are orphans in a group nobody signals; one that reads or writes a pipe of the dead
// agent sees EOF or SIGPIPE, one that does neither (a sleeping grandchild, or one that setsid()ed
// into a session of its own) lives on. Only qkit's own stops (Stop, Wait, Shutdown) sweep the
// whole group.
//
// Go's caveat: the signal is sent when the thread that started the child ends, not the process.
// Go ends a thread only when a goroutine exits while locked to it (runtime.LockOSThread without
// UnlockOSThread), and a child started from a thread some other goroutine later ends that way
// would be killed early. qkit never does this: no package in its build locks a thread and exits
// locked (modernc.org/libc locks one only in Start, the main of a translated C program, which
// qkit does not use; natstest, a test helper, locks and unlocks its own). A change that adds such a
// goroutine must start children from a dedicated locked thread instead.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
