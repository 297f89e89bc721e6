// Go workload for issue 14: main.main calls doALot (2/3 of the iterations) and
// doLittle (1/3), and both spend their time in prepare, a small leaf that Go
// builds without a frame (no locals, no calls: no frame pointer is pushed). A
// frame-pointer walk from prepare skips its caller; a table walk keeps it.
// The iteration ratio is only what it aims at: main's goroutine is locked to
// its thread, which times every doALot and doLittle call on its CPU clock
// (CLOCK_THREAD_CPUTIME_ID). On SIGUSR1 goleaf prints, after its current round,
// "cpu ALOT_NS LITTLE_NS TOTAL_NS": the CPU time spent so far in doALot, in
// doLittle and in the whole process (CLOCK_PROCESS_CPUTIME_ID: GC, runtime
// threads). A round's length varies (prepare of 1.4-2.6 M and 0.7-1.3 M
// iterations) so that samples at a fixed rate cannot keep landing on the same
// points of it.
// With "copy" as second argument it runs main.main -> copyBig -> copy() instead:
// runtime.memmove, a frameless assembly leaf. With "sig" a second goroutine
// sends main's thread a SIGURG every ~20-80 us, so part of its CPU is spent in
// Go's signal handler, on a signal frame above the interrupted prepare.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// cpuNs reads a CPU-time clock: 2 CLOCK_PROCESS_CPUTIME_ID, 3 CLOCK_THREAD_CPUTIME_ID
// (a system call of well under a microsecond; no vDSO for these clocks).
func cpuNs(clock uintptr) int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

//go:noinline
func prepare(n int) int {
	acc := 0
	for i := 0; i < n; i++ {
		acc += i * i % 7
	}
	return acc
}

//go:noinline
func doALot(n int) int {
	return prepare(2 * n)
}

//go:noinline
func doLittle(n int) int {
	return prepare(n)
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
	// Thread CPU time is main's goroutine's only while it keeps its thread.
	runtime.LockOSThread()
	var report int32
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			atomic.StoreInt32(&report, 1)
		}
	}()
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
	var alotNs, littleNs int64
	rnd := uint64(88172645463325252)
	for time.Now().Before(deadline) {
		if copyMode {
			total += copyBig()
		} else {
			// xorshift: n of 700000-1299999, 1000000 on average
			rnd ^= rnd << 13
			rnd ^= rnd >> 7
			rnd ^= rnd << 17
			n := 700000 + int(rnd%600000)
			t0 := cpuNs(3)
			total += doALot(n)
			t1 := cpuNs(3)
			total += doLittle(n)
			t2 := cpuNs(3)
			alotNs += t1 - t0
			littleNs += t2 - t1
		}
		if atomic.SwapInt32(&report, 0) != 0 {
			fmt.Printf("cpu %d %d %d\n", alotNs, littleNs, cpuNs(2))
		}
	}
	if total == 42 {
		fmt.Println(total)
	}
}
