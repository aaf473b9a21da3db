package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// docPages are the documents a reader follows from the README: the README
// itself, every page under docs/, BENCHMARKS.md and the two package
// READMEs.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"../../README.md", "../../BENCHMARKS.md", "../../beam/README.md", "../../python/README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors returns the GitHub anchors of a Markdown page's headings: lower
// case, punctuation but '-' and '_' dropped, spaces turned into '-'.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(page, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '≤' && r != '≥':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDocLinks: every relative link of the documents names a file that
// exists, and every #anchor a heading of its page; the README stays short
// (at most 250 lines: the depth lives in docs/).
func TestDocLinks(t *testing.T) {
	for _, p := range docPages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := mdFence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := p
			if file != "" {
				path = filepath.Join(filepath.Dir(p), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", p, target, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			page, _ := os.ReadFile(path)
			if !anchors(string(page))[anchor] {
				t.Errorf("%s: link %q: no heading of %s has the anchor %q", p, target, path, anchor)
			}
		}
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250", n)
	}
}

// docSet returns a seeded set of n rows of K-class predictions with
// labels drawn from them (K = 1: one column, binary, held as (1 - p, p)).
func docSet(n, k int, seed uint64) *data.Set {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := &data.Set{N: n, K: max(k, 2), Probs: make([]float64, n*max(k, 2)), Labels: make([]int, n), Binary: k == 1}
	for i := range n {
		if k == 1 {
			p := rng.Float64()*0.9 + 0.05
			s.Probs[2*i], s.Probs[2*i+1] = 1-p, p
			if rng.Float64() < p*p {
				s.Labels[i] = 1
			}
			continue
		}
		row, sum := s.Probs[i*k:(i+1)*k], 0.0
		for j := range row {
			row[j] = rng.ExpFloat64() + 0.01
			sum += row[j]
		}
		u, acc := rng.Float64(), 0.0
		s.Labels[i] = k - 1
		for j := range row {
			row[j] /= sum
			if acc += row[j]; u < acc && s.Labels[i] == k-1 {
				s.Labels[i] = j
			}
		}
	}
	return s
}

// TestMetricsPage: docs/metrics.md names every metric of the registry (its
// key table's metric row lists exactly them), every JSON key a Result can
// carry, and every estimator, kernel, interval kind and loss the metrics
// report (found by
// evaluating every metric, with every variant, on a multi-class and a
// binary set), so that the page cannot fall behind the code.
func TestMetricsPage(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	named := func(w string) bool { return strings.Contains(page, "`"+w+"`") }

	all := slices.Clone(evaluate.Metrics)
	all = append(all, evaluate.ECEKDEDebiased, evaluate.SharpnessDebiased, evaluate.ATBDebiased)
	row := regexp.MustCompile("(?m)^\\| `metric` \\| (.*) \\|$").FindStringSubmatch(page)
	if row == nil {
		t.Fatal("docs/metrics.md has no `metric` row in its key table")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(row[1], -1) {
		listed = append(listed, m[1])
	}
	var want []string
	for _, m := range all {
		want = append(want, string(m))
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the metric row lists %v\nthe registry has  %v", listed, want)
	}
	for _, m := range all {
		if !strings.Contains(page, "## "+"`"+string(m)+"`") && !regexp.MustCompile("(?m)^#+ .*`"+string(m)+"`").MatchString(page) {
			t.Errorf("docs/metrics.md has no heading naming `%s`", m)
		}
	}

	for _, f := range reflect.VisibleFields(reflect.TypeFor[evaluate.Result]()) { // the embedded keys' too
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && !named(name) {
			t.Errorf("docs/metrics.md does not name the key `%s` (Result.%s)", name, f.Name)
		}
	}

	seen := map[string]string{}
	ctx := context.Background()
	for _, s := range []*data.Set{docSet(300, 4, 1), docSet(300, 1, 2)} {
		for _, o := range []evaluate.Options{
			{Metrics: evaluate.Metrics, Debias: true},
			{Metrics: evaluate.MetricSet{evaluate.ECEBin, evaluate.MCE}, Convention: "sklearn"},
		} {
			ev, err := evaluate.Evaluate(ctx, s, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ev.Results {
				if e.Error != "" {
					continue
				}
				js, _ := json.Marshal(e)
				seen["estimator "+e.Estimator] = string(js)
				seen["kernel "+e.Kernel] = string(js)
				seen["interval_kind "+e.IntervalKind] = string(js)
				seen["loss "+e.Loss] = string(js)
			}
		}
	}
	for k, js := range seen {
		_, w, _ := strings.Cut(k, " ")
		if w != "" && !named(w) {
			t.Errorf("docs/metrics.md does not name the %s `%s` (%s)", strings.Fields(k)[0], w, js)
		}
	}
}
