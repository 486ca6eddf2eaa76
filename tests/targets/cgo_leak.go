// cgo_leak.go STOPFILE: a Go program whose C code (cgo) keeps a copy of every
// order it is given (remember_order, C.malloc), 64 KiB each, until STOPFILE
// exists (at most 120 s). It prints "ready" when started.
package main

/*
#include <stdlib.h>
#include <string.h>

// remember_order keeps a copy of every order it is given: a leak in C.
static char **orders;
static size_t norders, cap;

void remember_order(size_t n)
{
	char *p = malloc(n);
	memset(p, 'o', n);
	if (norders == cap) {
		cap = cap ? cap * 2 : 1024;
		orders = realloc(orders, cap * sizeof *orders);
	}
	orders[norders++] = p;
}
*/
import "C"

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Println("ready")
	end := time.Now().Add(120 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		C.remember_order(C.size_t(64 << 10))
		if i%64 == 63 {
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := os.Stat(os.Args[1]); err == nil {
			return
		}
	}
}
