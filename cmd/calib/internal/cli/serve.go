package cli

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/serve"
)

// minTokenBytes is the shortest bearer token --token-file may hold.
const minTokenBytes = 16

func newServeCmd() *cobra.Command {
	var o serve.Options
	var lo serve.ListenOptions
	var tokenFile string
	var maxBodyMiB int
	cmd := command("serve --maps DIR", "Apply calibration maps over HTTP (calib's /v1 API and the Open Inference Protocol v2), with Prometheus metrics", exactArgs(0), func(cmd *cobra.Command, args []string) error {
		if o.MapsDir == "" {
			return usageErrorf("--maps DIR is required: a directory of NAME.json maps written by calib fit")
		}
		if (lo.TLSCert == "") != (lo.TLSKey == "") {
			return usageErrorf("--tls-cert and --tls-key: give both or neither")
		}
		if lo.ClientCA != "" && lo.TLSCert == "" {
			return usageErrorf("--tls-client-ca needs TLS: give --tls-cert and --tls-key")
		}
		if tokenFile != "" {
			b, err := os.ReadFile(tokenFile)
			if err != nil {
				return usageErrorf("--token-file: %v", err)
			}
			if o.Token = bytes.TrimSpace(b); len(o.Token) < minTokenBytes {
				return usageErrorf("--token-file %s: the token has %d bytes; want at least %d (a random one: head -c 32 /dev/urandom | base64)", tokenFile, len(o.Token), minTokenBytes)
			}
		}
		if err := serve.CheckExposure(lo.Addr, tokenFile != "", lo.ClientCA != ""); err != nil {
			return usageErrorf("--addr %s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), serve.ErrExposed.Error()+": "), "serve: "))
		}
		o.MaxBodyBytes = int64(maxBodyMiB) << 20
		stderr := cmd.ErrOrStderr()
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		s, err := serve.New(o)
		if err != nil {
			return inputError{err}
		}
		// SIGTERM drains the requests in flight, then exits 0; SIGHUP
		// reloads the maps; Ctrl-C stops at once.
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
		defer stop()
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					s.Reload()
				}
			}
		}()
		scheme := "http"
		if lo.TLSCert != "" {
			scheme = "https"
		}
		err = s.Serve(ctx, lo, func(a net.Addr) {
			fmt.Fprintf(stderr, "calib serve: listening on %s://%s (maps: %s)\n", scheme, a, strings.Join(s.Maps().Names(), ", "))
		})
		if err == nil {
			fmt.Fprintln(stderr, "calib serve: stopped")
		}
		return err
	})
	fs := cmd.Flags()
	fs.StringVar(&o.MapsDir, "maps", "", "the `DIR` of maps (NAME.json, written by calib fit), each served as NAME")
	fs.StringVar(&lo.Addr, "addr", "127.0.0.1:8080", "`host:port` to listen on (:0: a free port); an address beyond loopback needs --token-file or --tls-client-ca")
	fs.StringVar(&tokenFile, "token-file", "", "a `FILE` holding the bearer token every request but the health checks must carry (at least 16 bytes)")
	fs.StringVar(&lo.TLSCert, "tls-cert", "", "TLS certificate `FILE` (PEM): serve HTTPS")
	fs.StringVar(&lo.TLSKey, "tls-key", "", "TLS key `FILE` (PEM)")
	fs.StringVar(&lo.ClientCA, "tls-client-ca", "", "CA certificates `FILE` (PEM): require and verify client certificates")
	fs.BoolVar(&o.Admin, "admin", false, "turn on POST /v1/admin/reload (reads the maps directory again, as SIGHUP does)")
	fs.IntVar(&maxBodyMiB, "max-body-mib", serve.DefaultMaxBodyBytes>>20, "largest request body, in MiB (413 past it)")
	fs.IntVar(&o.MaxRows, "max-rows", serve.DefaultMaxRows, "most rows of one request (413 past it)")
	fs.DurationVar(&lo.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "time to read a request")
	fs.DurationVar(&lo.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "time to answer a request")
	fs.DurationVar(&lo.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	return cmd
}
