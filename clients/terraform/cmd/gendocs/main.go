// Command gendocs writes the provider's reference (docs/) from its schema; -check only compares.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jobsched/terraform-provider-jobsched/internal/docgen"
	"github.com/jobsched/terraform-provider-jobsched/internal/provider"
)

func main() {
	dir := flag.String("dir", "docs", "where the reference goes")
	flag.Parse()
	pages, err := docgen.Render(context.Background(), provider.New("docs")())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, text := range pages {
		target := filepath.Join(*dir, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(target, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Printf("wrote %d pages under %s\n", len(pages), *dir)
}
