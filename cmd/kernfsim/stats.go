package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kernfsim/kernfsim/internal/cli"
)

func newStatsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "stats MOUNTPOINT",
		Short:   "Pretty-print a kernfsim mount's live counters (kernel/kernfsim/stats)",
		Example: "  kernfsim stats /mnt/k",
		Args:    cli.MountpointArg("kernfsim stats /mnt/k"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := readStats(args[0])
			if err != nil {
				return err
			}
			return printStats(cmd.OutOrStdout(), kv)
		},
	}
}

// readStats reads and parses MOUNTPOINT/kernel/kernfsim/stats.
func readStats(mnt string) ([][2]string, error) {
	b, err := os.ReadFile(filepath.Join(mnt, "kernel/kernfsim/stats"))
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return nil, &cli.UsageError{Err: fmt.Errorf("%s: the kernfsim server is gone (transport endpoint is not connected): restart it with kernfsim mount %s --force", mnt, mnt)}
	case errors.Is(err, os.ErrNotExist):
		return nil, &cli.UsageError{Err: fmt.Errorf("%s is not a kernfsim mount (no kernel/kernfsim/stats)", mnt)}
	case err != nil:
		return nil, &cli.RuntimeError{Err: err}
	}
	var kv [][2]string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			kv = append(kv, [2]string{k, v})
		}
	}
	return kv, nil
}

// printStats prints the counters in groups: the server (lock, tables,
// requests by opcode, non-zero ones only), the tree, the lock's counters
// and the grace periods.
func printStats(out io.Writer, kv [][2]string) error {
	titles := map[string]string{"server": "server", "requests": "requests", "tree": "tree", "lock": "lock counters", "grace": "grace periods"}
	bw := bufio.NewWriter(out)
	section := "-"
	for _, p := range kv {
		group, name, found := strings.Cut(p[0], ".")
		if !found {
			group, name = "", p[0]
		}
		if group == "requests" && p[1] == "0" {
			continue
		}
		if group != section {
			section = group
			fmt.Fprintf(bw, "%s\n", titles[group])
		}
		fmt.Fprintf(bw, "  %-22s %14s\n", name, humanize(name, p[1]))
	}
	return bw.Flush()
}

// humanize shows nanosecond counters as durations.
func humanize(name, v string) string {
	if !strings.HasSuffix(name, "_ns") {
		return v
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	return time.Duration(n).String()
}
