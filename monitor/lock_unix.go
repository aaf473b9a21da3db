//go:build unix

package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir (its file LOCK, flock), so that
// two processes never write one state directory; the lock goes with the
// file's closing or the process's end.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("monitor: %s is in use by another process (its LOCK is held): one server per state directory", dir)
		}
		return nil, fmt.Errorf("monitor: lock %s: %w", dir, err)
	}
	return f, nil
}
