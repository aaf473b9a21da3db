package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calib-dev/calib/data"
)

// repoRoot is the repository root from this package's directory.
const repoRoot = "../../../../"

// docFiles are the documents whose shell examples TestDocExamples runs.
var docFiles = []string{"README.md", "docs/commands.md", "docs/streaming.md", "docs/serve.md", "docs/python.md", "docs/library.md"}

// docCommand is a `calib ...` line of a document's code block: its
// place and its arguments after "calib".
type docCommand struct {
	where string
	args  []string
}

// docCommands returns the calib commands of the code blocks of a
// document, in order: lines starting with "calib " (or "mkdir D && calib
// "), continued past a trailing backslash, a trailing "# comment" cut.
func docCommands(t *testing.T, name string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(repoRoot + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	in := false
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		at := i + 1
		for strings.HasSuffix(strings.TrimRight(l, " "), `\`) && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(strings.TrimRight(l, " "), `\`) + " " + strings.TrimSpace(lines[i])
		}
		if _, rest, ok := strings.Cut(l, " && calib "); ok && strings.HasPrefix(l, "mkdir ") {
			l = "calib " + rest
		}
		if !strings.HasPrefix(l, "calib ") {
			continue
		}
		words, err := shellWords(strings.TrimPrefix(l, "calib "))
		if err != nil {
			t.Fatalf("%s:%d: %v", name, at, err)
		}
		out = append(out, docCommand{where: fmt.Sprintf("%s:%d", name, at), args: words})
	}
	return out
}

// shellWords splits a command line as a POSIX shell does for the quoting
// the documents use (single and double quotes, no expansions), up to an
// unquoted "#" that starts a word.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unclosed %c in %q", c, s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// docFixtures writes into dir the files the documents' examples name:
// the first docRows rows of CIFAR-10 DenseNet-121 (focal loss) logits and
// labels under the names the examples use, their probabilities as test.npy
// and val.npy, a golden CSV as
// preds.csv, preds.jsonl and the two files of logs/2026-11/, the same rows
// as shards/*.parquet, and the tabular data set train/tabular/vehicle.csv.gz.
func docFixtures(t *testing.T, dir string) {
	t.Helper()
	src := repoRoot + "testdata/logits/cifar10_densenet121-flsd53/"
	mkdir := func(name string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		mkdir(filepath.Dir(to))
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first docRows rows of each split: the examples' outputs, not
	// their figures, are what is checked.
	for _, split := range []string{"test", "val"} {
		s, err := data.Load(src+split+"_logits.npy", data.Options{Labels: src + split + "_labels.npy", Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		n := min(docRows, s.N)
		var logits, probs bytes.Buffer
		if err := data.WriteNPY(&logits, s.Logits[:n*s.K], s.K); err != nil {
			t.Fatal(err)
		}
		if err := data.WriteNPY(&probs, s.Probs[:n*s.K], s.K); err != nil {
			t.Fatal(err)
		}
		labels := int64NPY(s.Labels[:n])
		write(split+"_logits.npy", logits.Bytes())
		write(split+"_labels.npy", labels)
		write(split+".npy", probs.Bytes())
		if split == "test" {
			for _, prefix := range []string{"", "big_"} {
				write(prefix+"logits.npy", logits.Bytes())
				write(prefix+"labels.npy", labels)
			}
			write("y.npy", labels)
		} else {
			write("yv.npy", labels)
		}
	}
	copyFile(repoRoot+"train/tabular/vehicle.csv.gz", "train/tabular/vehicle.csv.gz")

	csv := golden + "c02_n200_k3.csv"
	copyFile(csv, "preds.csv")
	s, err := data.Load(csv, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var jl bytes.Buffer
	for i := range s.N {
		line, _ := json.Marshal(map[string]any{"probs": s.Probs[i*s.K : (i+1)*s.K], "label": s.Labels[i]})
		jl.Write(append(line, '\n'))
	}
	write("preds.jsonl", jl.Bytes())
	half := s.N / 2 * s.K
	parts := [][2]int{{0, half}, {half, len(s.Probs)}}
	mkdir("logs/2026-11")
	mkdir("shards")
	for i, p := range parts {
		rows := s.Labels[p[0]/s.K : p[1]/s.K]
		if err := data.WriteFile(filepath.Join(dir, fmt.Sprintf("logs/2026-11/part-%d.csv", i)), s.Probs[p[0]:p[1]], s.K, rows); err != nil {
			t.Fatal(err)
		}
		var pq bytes.Buffer
		if err := data.WriteParquet(&pq, s.Probs[p[0]:p[1]], s.K, rows, nil, data.ParquetWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		write(fmt.Sprintf("shards/part-%d.parquet", i), pq.Bytes())
	}
	mkdir("maps")
}

// docRows is the number of rows of each split docFixtures writes.
const docRows = 2000

// int64NPY returns labels as a one-dimensional little-endian int64 NPY
// array (format 1.0, its header padded to 64 bytes).
func int64NPY(labels []int) []byte {
	header := fmt.Sprintf("{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }", len(labels))
	pad := 64 - (10+len(header)+1)%64
	header += strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	for _, y := range labels {
		binary.Write(&b, binary.LittleEndian, int64(y))
	}
	return b.Bytes()
}

// TestDocExamples runs every calib command of the documents' code blocks
// (docFiles), each document's in order in one directory of the files they
// name (docFixtures), and checks that each exits 0; calib serve, which
// runs until stopped, is only checked to parse its flags (the serve tests
// start the real server).
func TestDocExamples(t *testing.T) {
	ran := 0
	for _, name := range docFiles {
		cmds := docCommands(t, name)
		if len(cmds) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			dir := t.TempDir()
			docFixtures(t, dir)
			t.Chdir(dir)
			for _, c := range cmds {
				args := c.args
				if args[0] == "serve" {
					args = append(args, "--help")
				}
				var out, errb bytes.Buffer
				t0 := time.Now()
				code := Main(t.Context(), args, io.Writer(&out), &errb)
				t.Logf("%s: %.2f s", c.where, time.Since(t0).Seconds())
				if code != 0 {
					t.Errorf("%s: calib %s: exit %d: %s", c.where, strings.Join(c.args, " "), code, errb.String())
				}
				ran++
			}
		})
	}
	if ran < 20 {
		t.Errorf("%d commands ran: the documents' examples were not found", ran)
	}
}
