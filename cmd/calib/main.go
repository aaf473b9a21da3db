// Command calib measures the calibration of probabilistic classifiers; run
// `calib help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/calib-dev/calib/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
