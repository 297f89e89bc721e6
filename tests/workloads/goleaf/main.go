// Go workload for issue 14: main.main calls doALot (2/3 of the work) and
// doLittle (1/3), and both spend their time in prepare, a small leaf that Go
// builds without a frame (no locals, no calls: no frame pointer is pushed). A
// frame-pointer walk from prepare skips its caller; a table walk keeps it.
// With "copy" as second argument it runs main.main -> copyBig -> copy() instead:
// runtime.memmove, a frameless assembly leaf. With "sig" a second goroutine
// sends main's thread a SIGURG every ~20-80 us, so part of its CPU is spent in
// Go's signal handler, on a signal frame above the interrupted prepare.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

//go:noinline
func prepare(n int) int {
	acc := 0
	for i := 0; i < n; i++ {
		acc += i * i % 7
	}
	return acc
}

//go:noinline
func doALot() int {
	return prepare(2000000)
}

//go:noinline
func doLittle() int {
	return prepare(1000000)
}

var src, dst = make([]byte, 1<<20), make([]byte, 1<<20)

//go:noinline
func copyBig() int {
	n := 0
	for i := 0; i < 64; i++ {
		n += copy(dst, src)
	}
	return n
}

func main() {
	secs := 10.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	copyMode := len(os.Args) > 2 && os.Args[2] == "copy"
	if len(os.Args) > 2 && os.Args[2] == "sig" {
		// SIGURG is Go's preemption signal: its handler runs and returns
		// through runtime.sigreturn, and nothing else changes.
		runtime.LockOSThread()
		pid, tid := syscall.Getpid(), syscall.Gettid()
		go func() {
			// Its own thread, with 1 ns of timer slack (PR_SET_TIMERSLACK):
			// the default 50 us would space the signals out.
			runtime.LockOSThread()
			syscall.Syscall(syscall.SYS_PRCTL, 29, 1, 0)
			for {
				syscall.Tgkill(pid, tid, syscall.SIGURG)
				// Not time.Sleep: Go's timers wake at 1 ms at best.
				ts := syscall.Timespec{Nsec: 20000}
				syscall.Nanosleep(&ts, nil)
			}
		}()
	}
	fmt.Println(os.Getpid())
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	total := 0
	for time.Now().Before(deadline) {
		if copyMode {
			total += copyBig()
		} else {
			total += doALot() + doLittle()
		}
	}
	if total == 42 {
		fmt.Println(total)
	}
}
