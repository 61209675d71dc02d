package docgen

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/jobsched/terraform-provider-jobsched/internal/provider"
)

// TestCommittedReferenceIsGenerated fails when docs/ differs from what the schema renders:
// run `go run ./cmd/gendocs` (make terraform-docs) and commit.
func TestCommittedReferenceIsGenerated(t *testing.T) {
	pages, err := Render(context.Background(), provider.New("docs")())
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join("..", "..", "docs")
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(docs, name))
		if err != nil || string(got) != want {
			t.Errorf("docs/%s is not what the schema renders: run `go run ./cmd/gendocs` in clients/terraform", name)
		}
	}
	var committed []string
	_ = filepath.WalkDir(docs, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(docs, path)
			committed = append(committed, rel)
		}
		return nil
	})
	sort.Strings(committed)
	for _, name := range committed {
		if _, ok := pages[name]; !ok {
			t.Errorf("docs/%s is committed but not generated (a removed resource?): delete it", name)
		}
	}
	if len(pages) < 6 {
		t.Errorf("only %d pages rendered: want the index, 3 resources and 2 data sources", len(pages))
	}
}
