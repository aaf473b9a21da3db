// Command calib measures the calibration of probabilistic classifiers; run
// `calib help` for the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/calib-dev/calib/cmd/calib/internal/cli"
)

// grace is how long an interrupted command may take to return by itself
// (every long loop checks the context) before calib exits anyway.
const grace = 800 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	finished := make(chan struct{})
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		// Ctrl-C: the context is cancelled; give the command a moment to
		// stop cleanly, then exit with 130 whatever it is doing. Outputs
		// are written atomically, so none is left half-written.
		select {
		case <-finished:
		case <-time.After(grace):
			fmt.Fprintln(os.Stderr, "calib: interrupted")
			os.Exit(cli.ExitInterrupted)
		}
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	close(finished)
	stop()
	os.Exit(code)
}
