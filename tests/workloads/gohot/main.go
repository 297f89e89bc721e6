// Go workload: spends its CPU in main.hotLoop called through main.compute, so a
// profile must show main.* frames with a stack that reaches main.main.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func hotLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
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
