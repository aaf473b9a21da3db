package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamples: every Go block of the documents (docPages) marked
// `<!-- example: FILE NAME -->` is, line for line, the body of the Example
// function NAME in FILE (one tab of indentation removed), so that the
// documents' library examples compile and their output is checked by go test.
func TestReadmeExamples(t *testing.T) {
	marked := regexp.MustCompile("(?s)<!-- example: (\\S+) (\\S+) -->\n```go\n(.*?)\n```")
	var ms [][]string
	for _, p := range docPages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, marked.FindAllStringSubmatch(string(b), -1)...)
	}
	if len(ms) < 2 {
		t.Fatalf("%d marked examples in the documents, want at least 2", len(ms))
	}
	for _, m := range ms {
		file, name, block := m[1], m[2], m[3]
		src, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		head := "func " + name + "() {\n"
		i := strings.Index(string(src), head)
		if i < 0 || !strings.HasPrefix(name, "Example") {
			t.Errorf("%s: no example %s", file, name)
			continue
		}
		body := string(src[i+len(head):])
		body = body[:strings.Index(body, "\n}\n")]
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
		if got := strings.Join(lines, "\n"); got != block {
			t.Errorf("the documents' example %s differs from %s's:\n%s\nwant:\n%s", name, file, block, got)
		}
	}
}
