// noagent_go.go: the Go twin of noagent_target.c, built by
// tests/run-capture-go.sh with CGO_ENABLED=0 (a statically linked Go program):
// it says "up PID", allocates a little, waits (at most 60 s) for the file
// os.Args[1] to exist, says "done" and exits with status 3.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	block := make([]byte, 4<<20)
	for i := range block {
		block[i] = 1
	}
	fmt.Printf("up %d preload=%s\n", os.Getpid(), os.Getenv("LD_PRELOAD"))
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(os.Args[1]); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("done %d\n", block[12345])
	os.Exit(3)
}
