package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/fusefs"
	"github.com/kernfsim/kernfsim/internal/cli"
	"github.com/kernfsim/kernfsim/kernfsim"
)

func newTreeCmd() *cobra.Command {
	var f cli.TreeFlags
	cmd := &cobra.Command{
		Use:                   "tree [tree flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Print every node of the tree, like find",
		Long: `Print every node of the tree, one per line, depth first in name order:
its type (d directory, f attribute file, l symlink), its mode and its path;
a symlink also shows its target.`,
		Example: `  kernfsim tree
  kernfsim tree --cpus 8 --sockets 1 --mem-blocks 4 | grep topology/
  kernfsim tree --cpus 448 --sockets 4 --threads-per-core 4 | wc -l`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.Build(fusefs.StatsSource)
			if err != nil {
				return err
			}
			if err := printTree(cmd.Context(), cmd.OutOrStdout(), b.Tree); err != nil {
				return &cli.RuntimeError{Err: err}
			}
			return nil
		},
	}
	cli.AddShapeFlags(cmd.Flags(), &f)
	return cmd
}

// printTree writes every node of t below the root to out, depth first,
// each directory's entries in name order.
func printTree(ctx context.Context, out io.Writer, t *kernfsim.Tree) error {
	w := bufio.NewWriter(out)
	if err := printDir(ctx, w, t, t.Root(), ""); err != nil {
		return err
	}
	return w.Flush()
}

func printDir(ctx context.Context, w *bufio.Writer, t *kernfsim.Tree, dir *kernfsim.Node, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var names []string
	if err := t.Readdir(dir, 0, func(d kernfsim.Dirent) bool { names = append(names, d.Name); return true }); err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		n, err := t.Lookup(dir, name)
		if err != nil {
			return err
		}
		p := path + name
		if err := printNode(w, t, n, p); err != nil {
			return err
		}
		if n.Kind() == kernfsim.KindDir {
			if err := printDir(ctx, w, t, n, p+"/"); err != nil {
				return err
			}
		}
	}
	return nil
}

// printNode writes one line: "d 0755 devices", "f 0444 .../core_id",
// "l 0777 class/net/lo -> ../../devices/virtual/net/lo".
func printNode(w *bufio.Writer, t *kernfsim.Tree, n *kernfsim.Node, path string) error {
	st := t.Getattr(n)
	kind := map[kernfsim.Kind]byte{kernfsim.KindDir: 'd', kernfsim.KindAttr: 'f', kernfsim.KindSymlink: 'l'}[n.Kind()]
	_, err := fmt.Fprintf(w, "%c %04o %s", kind, uint32(st.Mode.Perm()), path)
	if err == nil && n.Kind() == kernfsim.KindSymlink {
		_, err = fmt.Fprintf(w, " -> %s", n.Target())
	}
	if err == nil {
		err = w.WriteByte('\n')
	}
	return err
}
