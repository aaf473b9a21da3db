//go:build !unix

package monitor

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir's LOCK file; without flock, two processes on one
// directory are not detected here.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	return f, nil
}
