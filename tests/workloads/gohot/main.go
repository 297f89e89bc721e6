// Go workload: spends its CPU in main.hotLoop called through main.compute, so a
// profile must show main.* frames with a stack that reaches main.main.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// hotLoop keeps a small array on its stack so that Go gives it a frame (and a
// frame pointer): a frameless leaf would hide its caller from any frame-pointer
// unwinder, hearth's and perf's alike.
//
//go:noinline
func hotLoop(n int) int {
	var acc [8]int
	for i := 0; i < n; i++ {
		acc[i&7] += i * i % 7
	}
	return acc[0] + acc[7]
}

//go:noinline
func compute(n int) int {
	return hotLoop(n) + hotLoop(n/2)
}

func main() {
	secs := 10.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	fmt.Println(os.Getpid())
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	total := 0
	for time.Now().Before(deadline) {
		total += compute(1000000)
	}
	if total == 42 {
		fmt.Println(total)
	}
}
