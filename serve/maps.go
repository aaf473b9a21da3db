package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
)

// Map is a recalibration map the server applies: the map of the file
// Name.json in the maps directory.
type Map struct {
	Name string
	// Version is the first 12 hexadecimal digits of SHA256: a map's
	// version changes exactly when its file's bytes do (the Open
	// Inference Protocol's model_version).
	Version string
	// SHA256 is the hexadecimal SHA-256 of the file's bytes.
	SHA256     string
	Calibrator recal.Calibrator
}

// Apply returns the calibrated probabilities (n×K, row-major) of n rows
// of cols values each (probabilities, or logits), exactly as `calib
// apply` computes them from a file holding the same numbers: the same
// checks (data.New, tolerance data.DefaultTolerance; renormalize divides a
// row whose sum is off by more by its sum, as --renormalize does) and the
// same map. A row's error names the field it came from (what) and the
// 1-based row and column.
func (m *Map) Apply(values []float64, cols int, logits, renormalize bool, what string) ([]float64, error) {
	info := m.Calibrator.Info()
	s, err := data.New(values, cols, nil, logits, data.Options{Unlabeled: true, K: info.Columns(), Logits: logits, Renormalize: renormalize})
	if err != nil {
		return nil, dataError(err, what)
	}
	s.File = what
	out, err := recal.Apply(m.Calibrator, s)
	if err != nil {
		return nil, &RequestError{Field: what, Err: err}
	}
	return out.Probs, nil
}

// K is the number of classes of the map's output.
func (m *Map) K() int { return m.Calibrator.Info().K }

// Maps is the set of maps the server applies, by name; a Maps is never
// changed once built (a reload builds another and swaps it in).
type Maps struct {
	byName map[string]*Map
	names  []string // sorted
}

// Get returns the map name, or nil.
func (ms *Maps) Get(name string) *Map {
	if ms == nil {
		return nil
	}
	return ms.byName[name]
}

// Names returns the maps' names, sorted.
func (ms *Maps) Names() []string {
	if ms == nil {
		return nil
	}
	return ms.names
}

// LoadError is the error of one map file that could not be loaded: its
// file and why (recal.Load's message).
type LoadError struct {
	File string
	Err  error
}

func (e *LoadError) Error() string { return e.File + ": " + e.Err.Error() }

func (e *LoadError) Unwrap() error { return e.Err }

// LoadMaps reads every *.json file of dir as a map named by its file name
// without the extension (names of letters, digits, '.', '_' and '-' only:
// they appear in URLs and metric labels). Files that fail to load are
// returned in errs, each a *LoadError; where old (the maps being
// replaced, or nil) holds a map of that name, it is kept, so that a bad
// file never replaces a good map. A map whose file was removed is dropped.
// The error err is for dir itself (missing, unreadable).
func LoadMaps(dir string, old *Maps) (ms *Maps, errs []error, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("maps directory: %w", err)
	}
	ms = &Maps{byName: map[string]*Map{}}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		m, err := loadMap(file, name)
		if err != nil {
			errs = append(errs, &LoadError{File: file, Err: err})
			if prev := old.Get(name); prev != nil {
				ms.byName[name] = prev
			}
			continue
		}
		ms.byName[name] = m
	}
	for name := range ms.byName {
		ms.names = append(ms.names, name)
	}
	sort.Strings(ms.names)
	return ms, errs, nil
}

// loadMap reads and checks the map file (recal.Load).
func loadMap(file, name string) (*Map, error) {
	if !validName(name) {
		return nil, fmt.Errorf("map name %q: use letters, digits, '.', '_' and '-' only (the name is in URLs and metric labels)", name)
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removed while reading")
	} else if err != nil {
		return nil, err
	}
	c, err := recal.Load(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	return &Map{Name: name, Version: h[:12], SHA256: h, Calibrator: c}, nil
}

// validName reports whether name is a map name: 1 to 128 letters,
// digits, '.', '_' and '-'.
func validName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}
