package evaluate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/calib-dev/calib/notion"
)

// TestStatesOfEarlierVersions keeps the promise of the states' envelope:
// the first- and second-pass states that calib wrote before kinds were
// recorded (testdata/state-v2: version 2 of evaluate.Sums and KernelSums,
// the sums inside without a kind, MMCESums without a version; written by
// commit 0bf4293 on 200 rows of c02_n200_k3 with every streamed metric,
// and on 60 rows with data-dependent bins) decode, and Finish gives the
// document that calib wrote from them then, byte for byte but for the one
// change of the document's form since (version 2: a "version" key; the
// class-wise ece_kde entries spelled class_wise, not marginal). Written again,
// each state and every sum in it carries its kind, and reads back to the
// same document.
func TestStatesOfEarlierVersions(t *testing.T) {
	for _, name := range []string{"fixed", "sketched"} {
		read := func(file string) []byte {
			b, err := os.ReadFile("testdata/state-v2/" + name + "-" + file)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		finish := func(sb, kb []byte) []byte {
			var s Sums
			var ks KernelSums
			if err := json.Unmarshal(sb, &s); err != nil {
				t.Fatalf("%s sums: %v", name, err)
			}
			if err := json.Unmarshal(kb, &ks); err != nil {
				t.Fatalf("%s kernel sums: %v", name, err)
			}
			ev, err := Finish(&s, &ks)
			if err != nil {
				t.Fatal(err)
			}
			ev.ZeroTimes()
			var doc bytes.Buffer
			if err := WriteJSON(&doc, ev); err != nil {
				t.Fatal(err)
			}
			return doc.Bytes()
		}
		sb, kb := read("sums.json"), read("kernelsums.json")
		if strings.Contains(string(sb)+string(kb), `"kind"`) {
			t.Fatalf("%s: the fixtures have kinds", name)
		}
		got, want := finish(sb, kb), documentNow(read("finish.json"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the earlier states give another document:\n%s\nwant:\n%s", name, got, want)
		}
		var s Sums
		var ks KernelSums
		_ = json.Unmarshal(sb, &s)
		_ = json.Unmarshal(kb, &ks)
		sb2, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		kb2, err := json.Marshal(&ks)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{`{"kind":"evaluate.Sums","version":2,`, `"scores":{"kind":"metric.ScoreSums"`} {
			if !strings.Contains(string(sb2), kind) {
				t.Errorf("%s: written again, the sums lack %s", name, kind)
			}
		}
		if !strings.HasPrefix(string(kb2), `{"kind":"evaluate.KernelSums","version":2,`) {
			t.Errorf("%s: written again, the kernel sums start %.60s", name, kb2)
		}
		if again := finish(sb2, kb2); !bytes.Equal(again, want) {
			t.Errorf("%s: written again, another document:\n%s", name, again)
		}
	}
}

// documentNow is an evaluation document of version 1 (calib before the
// document had a version) as today's version writes it: the "version" key
// first, ece_kde's class-wise entries spelled class_wise, the paper
// number named where the document has it, and the canonical binned
// warnings pointing at the headline.
func documentNow(b []byte) []byte {
	s := strings.Replace(string(b), `{"n":`, fmt.Sprintf(`{"version":%d,"n":`, documentVersion), 1)
	s = strings.ReplaceAll(s, `"notion":"marginal"`, `"notion":"class_wise"`)
	s = strings.ReplaceAll(s, "read ece_witness instead", "read "+Headline.String()+" instead")
	if strings.Contains(s, `{"metric":"ece_bin","notion":"top_label","binning":"equal_width","bins":15,"p":1,`) ||
		strings.Contains(s, `{"metric":"ece_bin","notion":"top_label","binning":"equal_mass","bins":9,"p":1,`) {
		i := strings.LastIndex(s, `,"seconds":`)
		s = s[:i] + `,"paper_number":{"metric":"ece_bin","notion":"top_label","p":1}` + s[i:]
	}
	// Every binned entry names its convention (calib's).
	return binnedConvention.ReplaceAll([]byte(s), []byte(`$1"convention":"calib",`))
}

var binnedConvention = regexp.MustCompile(`("bin_edges":"[^"]*",)`)

// TestDocumentVersion1: a document of version 1 (no "version" key, the
// class-wise ece_kde entries spelled marginal) decodes into today's form,
// its entries found by today's keys, and is written again as version 2; a
// newer version is refused.
func TestDocumentVersion1(t *testing.T) {
	v1 := `{"n":2,"k":3,"results":[{"metric":"ece_kde","notion":"marginal","p":1,"value":0.1,"weighted":false},{"metric":"ks","notion":"class_wise","value":0.2,"weighted":false}],"seconds":0}`
	var ev Evaluation
	if err := json.Unmarshal([]byte(v1), &ev); err != nil {
		t.Fatal(err)
	}
	if e := ev.Lookup(Key{Metric: ECEKDE, Notion: notion.ClassWise, P: 1}); e == nil || *e.Value != 0.1 || ev.Version != documentVersion {
		t.Errorf("version 1 document: %+v", ev)
	}
	if e := ev.Lookup(Key{Metric: KS, Notion: notion.ClassWise}); e == nil || e.group() != groupClassWise {
		t.Errorf("ks class_wise: %+v", e)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, &ev); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(fmt.Sprintf(`"version":%d,`, documentVersion))) || !bytes.Contains(b.Bytes(), []byte(`{"metric":"ece_kde","notion":"class_wise"`)) {
		t.Errorf("written again: %s", b.Bytes())
	}
	if err := json.Unmarshal([]byte(`{"version":4,"n":2,"k":3,"results":[]}`), &ev); err == nil {
		t.Error("a document of version 4 read")
	}
}

// TestDocumentVersion2: in a document of version 2, ece_variational's
// Brier entry had no p and its lp entries at p != 1 held the mean norm
// E||E[y | f] - f||_p, not CE_p^p: read today, the Brier entry is p = 2
// (found by its key) and the lp entry at p = 2 is dropped, so that no p
// column means anything but CE_p^p.
func TestDocumentVersion2(t *testing.T) {
	v2 := `{"version":2,"n":2,"k":3,"results":[` +
		`{"metric":"ece_variational","notion":"canonical","loss":"lp","p":1,"value":0.1,"weighted":false},` +
		`{"metric":"ece_variational","notion":"canonical","loss":"lp","p":2,"value":0.07,"weighted":false},` +
		`{"metric":"ece_variational","notion":"canonical","loss":"brier","value":0.01,"root":0.1,"weighted":false},` +
		`{"metric":"ece_variational","notion":"canonical","loss":"log","value":0.02,"weighted":false}],"seconds":0}`
	var ev Evaluation
	if err := json.Unmarshal([]byte(v2), &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Results) != 3 || ev.Version != documentVersion {
		t.Fatalf("%d entries, version %d: %+v", len(ev.Results), ev.Version, ev.Results)
	}
	if e := ev.Lookup(Key{Metric: ECEVariational, Notion: notion.Canonical, P: 2, Variant: "brier"}); e == nil || *e.Value != 0.01 {
		t.Errorf("the Brier entry at p = 2: %+v", e)
	}
	if e := ev.Lookup(Headline); e == nil || *e.Value != 0.1 || e.Root == nil || *e.Root != 0.1 {
		t.Errorf("the headline: %+v", e)
	}
	if ev.Headline == nil || ev.Headline.Metric != Headline.Metric || ev.Headline.Loss != Headline.Variant {
		t.Errorf("the document's headline key: %+v", ev.Headline)
	}
	if e := ev.Lookup(Key{Metric: ECEVariational, Notion: notion.Canonical, P: 2, Variant: "lp"}); e != nil {
		t.Errorf("the lp entry at p = 2 was kept: %+v", e)
	}
}

// TestStateModeSpelling: a first-pass state written with the mode spelled
// the earlier way ("marginal", "top-label") reads in today's spelling, so
// that it merges with a state written now with the same options.
func TestStateModeSpelling(t *testing.T) {
	b, err := os.ReadFile("testdata/state-v2/fixed-sums.json")
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), `"mode":"canonical,top_label"`, `"mode":"marginal, top-label"`, 1)
	if old == string(b) {
		t.Fatal("the fixture's mode is not canonical,top_label")
	}
	var s Sums
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	if s.st.Config.Mode != "class_wise,top_label" {
		t.Errorf("mode read as %q", s.st.Config.Mode)
	}
	var now Sums
	if err := json.Unmarshal(bytes.Replace(b, []byte(`"mode":"canonical,top_label"`), []byte(`"mode":"class_wise,top_label"`), 1), &now); err != nil {
		t.Fatal(err)
	}
	if configKey(s.st.Config) != configKey(now.st.Config) {
		t.Errorf("configs differ:\n%s\n%s", configKey(s.st.Config), configKey(now.st.Config))
	}
}
