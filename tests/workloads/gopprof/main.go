// Go workload for scrape tests: serves net/http/pprof on 127.0.0.1 (a free
// port, printed first on stdout) while it burns CPU in main.burnCPU, keeps
// memory allocated by main.allocHeap and parks goroutines in main.parkForever,
// so a scrape finds each in its own profile type. It also serves failing
// endpoints for the scraper's error paths: /garbage/... answers a body that is
// not a profile, /slow/... never answers.
package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"time"
)

var sink [][]byte

//go:noinline
func burnCPU() {
	x := 0
	for {
		for i := 0; i < 1000000; i++ {
			x += i * i % 7
		}
		if x == -1 {
			fmt.Println(x)
		}
	}
}

// allocHeap keeps 64 MiB live in 1 MiB blocks: the heap profile's inuse_space
// shows it under main.allocHeap. main records every allocation
// (runtime.MemProfileRate = 1): at Go's default rate of one sample per 512 KiB
// a 1 MiB block is sampled with probability 1-e^-2, so one snapshot's scaled
// estimate of the 64 MiB fell below 60 MiB in about one run in ten.
//
//go:noinline
func allocHeap() {
	for i := 0; i < 64; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
}

//go:noinline
func parkForever(c chan struct{}) {
	<-c
}

func main() {
	runtime.MemProfileRate = 1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	allocHeap()
	runtime.GC() // the heap profile shows the heap as of the last completed GC
	c := make(chan struct{})
	for i := 0; i < 20; i++ {
		go parkForever(c)
	}
	go burnCPU()
	http.HandleFunc("/garbage/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "this is not a pprof profile")
	})
	http.HandleFunc("/slow/", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	fmt.Fprintln(os.Stderr, http.Serve(ln, nil))
}
