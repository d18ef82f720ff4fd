package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// tape is --record and --replay (docs/replay.md): recording wraps the run's boundaries (the API
// server's transport, exec, the probes, the workstation's programs and files) and writes the
// bundle when the run ends; replaying answers the same boundaries from a bundle, with no
// cluster and no network. A nil tape does neither.
type tape struct {
	command   string
	path      string
	anonymize bool
	runID     string
	flags     []replay.Flag
	rec       *replay.Recorder
	play      *replay.Player
}

// replayCaseFile is the bundle of a case directory (testdata/replays/<case>/).
const replayCaseFile = "bundle.gz"

// notReplayed are the flags a bundle never carries: where the recording and the reports go,
// how they look, and files that exist only on the recording machine (the CA bundle was used
// by the HTTPS probe, whose judgement of the chain is recorded; a replay given its own
// --ca-file verifies the recorded certificates against it).
var notReplayed = map[string]bool{
	"record": true, "replay": true, "anonymize": true, "output": true, "json-file": true, "junit-file": true,
	"config": true, "color": true, "verbose": true, "no-wrap": true, "ca-file": true, "wait": true, "wait-interval": true,
	"deadline": true, "kubeconfig": true, "token": true, "username": true, "password": true, "client-certificate": true,
	"client-key": true, "certificate-authority": true, "as": true, "as-group": true, "as-uid": true, "server": true,
	"context": true, "cluster": true, "user": true, "cache-dir": true, "tls-server-name": true, "insecure-skip-tls-verify": true,
	"request-timeout": true, "disable-compression": true, "log-file": true, "v": true,
}

// completeTape reads --replay's bundle (and applies its flags to those the command line did not
// set) or prepares --record's recorder. Call it after --config was applied.
func (f *CheckFlags) completeTape(cmd *cobra.Command, command string) error {
	switch {
	case f.Record != "" && f.Replay != "":
		return usageErr("--record and --replay exclude each other: record a run, or replay a bundle")
	case f.Anonymize && f.Record == "":
		return usageErr("--anonymize applies to --record FILE")
	case f.Replay != "" && f.Wait > 0:
		return usageErr("--wait re-runs against a changing cluster; a replayed bundle does not change")
	case f.Replay != "":
		if st, err := os.Stat(f.Replay); err == nil && st.IsDir() {
			f.Replay = filepath.Join(f.Replay, replayCaseFile) // a test case's directory
		}
		b, err := replay.ReadFile(f.Replay)
		if err != nil {
			return &kube.UsageError{Message: "--replay " + err.Error(), Fix: "give a bundle written by --record (docs/replay.md)"}
		}
		if b.Command != command {
			return usageErr("--replay %s: the bundle recorded %q, not %q: run `kubectl lanaccess %s --replay %s`", f.Replay, b.Command, command, b.Command, f.Replay)
		}
		if err := applyRecordedFlags(cmd, b.Flags); err != nil {
			return usageErr("--replay %s: %v", f.Replay, err)
		}
		f.tape = &tape{command: command, path: f.Replay, runID: b.RunID, play: replay.NewPlayer(b)}
	case f.Record != "":
		f.tape = &tape{command: command, path: f.Record, anonymize: f.Anonymize, runID: podexec.NewRunID(), flags: recordableFlags(cmd)}
	}
	return nil
}

// recordableFlags are the command's own settings, defaults included (a default may change
// between versions; anonymizing maps the names they hold), and -n when given.
func recordableFlags(cmd *cobra.Command) []replay.Flag {
	var out []replay.Flag
	cmd.LocalFlags().VisitAll(func(fl *pflag.Flag) {
		if notReplayed[fl.Name] {
			return
		}
		value := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			value = strings.Join(sv.GetSlice(), ",")
		}
		out = append(out, replay.Flag{Name: fl.Name, Value: value})
	})
	if ns := namespaceGiven(cmd); ns != "" {
		out = append(out, replay.Flag{Name: "namespace", Value: ns})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// applyRecordedFlags sets the recorded flags the command line left alone; a flag this build
// does not know is an error (the bundle is newer, or of another command).
func applyRecordedFlags(cmd *cobra.Command, flags []replay.Flag) error {
	for _, rf := range flags {
		if notReplayed[rf.Name] {
			continue
		}
		fl := cmd.Flags().Lookup(rf.Name)
		if fl == nil {
			return fmt.Errorf("the bundle sets --%s, which this version does not have", rf.Name)
		}
		if fl.Changed {
			continue
		}
		var err error
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			var items []string
			if rf.Value != "" {
				items = strings.Split(rf.Value, ",")
			}
			err = sv.Replace(items)
		} else {
			err = fl.Value.Set(rf.Value)
		}
		if err != nil {
			return fmt.Errorf("the bundle's --%s %q: %w", rf.Name, rf.Value, err)
		}
		if rf.Name == "namespace" {
			fl.Changed = true // namespaceGiven sees the recorded -n as given
		}
	}
	return nil
}

// RunID is the helper pods' run identifier: the recorded one on replay, so that their names
// match; empty (a random one) otherwise.
func (t *tape) RunID() string {
	if t == nil {
		return ""
	}
	return t.runID
}

// connect wraps a client factory: recording, the API clients talk JSON (readable, can be
// anonymized) through the recording transport; replaying, they talk to the bundle.
func (t *tape) connect(next clientFactory) clientFactory {
	switch {
	case t == nil:
		return next
	case t.play != nil:
		return t.replayClients
	}
	return func(kubeFlags *kubeFlags, timeout time.Duration) (*clients, error) {
		c, err := next(kubeFlags, timeout)
		if err != nil || c.config == nil {
			return c, err
		}
		t.begin(replay.Cluster{Context: c.cluster.Context, Server: c.cluster.Server, Namespace: c.namespace})
		cfg := jsonOnly(rest.CopyConfig(c.config))
		cfg.Wrap(t.rec.WrapTransport)
		if c.typed, err = client.NewForConfig(cfg); err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		// as newClients builds it: custom resources of unserved groups are not asked for
		c.dynamic = kube.ServedOnly(kube.APIGroups(c.typed.Discovery()), dyn)
		c.tape = t
		return c, nil
	}
}

// begin starts the recording of one attempt (the last attempt's is the one saved).
func (t *tape) begin(cluster replay.Cluster) {
	if t == nil || t.play != nil {
		return
	}
	t.rec = replay.NewRecorder(t.command, version.Get().Version)
	t.rec.SetRun(cluster, t.flags, t.runID)
}

// jsonOnly makes every client of cfg send and ask for JSON: client-go's typed clients default to
// protobuf, which a bundle could neither show nor anonymize.
func jsonOnly(cfg *rest.Config) *rest.Config {
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	return cfg
}

// replayHost is the API server a replay talks to: a name that never resolves (RFC 6761).
const replayHost = "https://replay.invalid"

func (t *tape) replayClients(*kubeFlags, time.Duration) (*clients, error) {
	b := t.play.Bundle()
	w := &kube.WarningCollector{}
	cfg := jsonOnly(&rest.Config{Host: replayHost, Transport: t.play.Transport(), QPS: 1000, Burst: 1000, UserAgent: version.UserAgent(), WarningHandler: w})
	// The same wrappers as newClients: the lists answered (LA001 does not ask about them),
	// and custom resources only of served groups.
	reads := &kube.ReadLog{}
	cfg.Wrap(reads.Wrap)
	typed, err := client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{
		config: cfg, typed: typed, dynamic: kube.ServedOnly(kube.APIGroups(typed.Discovery()), dyn), warnings: w, reads: reads, namespace: b.Cluster.Namespace, tape: t,
		cluster: report.Cluster{Context: b.Cluster.Context + " (replay of " + t.path + ")", Server: b.Cluster.Server},
	}, nil
}

// executor decorates (recording) or replaces (replaying) the pod exec.
func (t *tape) executor(e podexec.Executor) podexec.Executor {
	switch {
	case t == nil:
		return e
	case t.play != nil:
		return t.play.Executor()
	case t.rec != nil:
		return t.rec.Executor(e)
	}
	return e
}

// prober decorates (recording) or replaces (replaying) the prober of vpn-trace --from-client's
// ladder: this machine's addresses, routes, sockets and resolver. nil: the real one.
func (t *tape) prober() facts.ClientProber {
	switch {
	case t == nil:
	case t.play != nil:
		return facts.ReplayingProber(t.play)
	case t.rec != nil:
		return facts.RecordingProber(facts.NetProber{}, t.rec)
	}
	return nil
}

// probes decorates (recording) or replaces (replaying) the network probes.
func (t *tape) probes(cfg probe.Config) probe.Config {
	switch {
	case t == nil:
	case t.play != nil:
		// The replay's own --ca-file verifies the recorded certificates again (Validate
		// reported an unreadable one); without it the recorded verification stands.
		if roots, err := probe.LoadRoots(cfg.CAFile); err == nil && roots != nil {
			t.play.SetRoots(roots)
		}
		cfg.DNS, cfg.HTTPS, cfg.Resolver, cfg.CAFile = t.play.DNS(), t.play.HTTPS(), t.play.Resolver(), ""
	case t.rec != nil:
		full, err := cfg.WithDefaults()
		if err != nil {
			return cfg // NewSet reports it
		}
		full.DNS, full.HTTPS, full.Resolver = t.rec.DNS(full.DNS), t.rec.HTTPS(full.HTTPS), t.rec.Resolver(full.Resolver)
		return full
	}
	return cfg
}

// workstation decorates (recording) or replaces (replaying) client-check's seams: the
// resolver, the DNS client, the programs it runs and the files it reads, and the OS whose
// programs it asks.
func (t *tape) workstation(o *clientCheckOptions) *clientCheckOptions {
	cp := *o
	switch {
	case t == nil:
	case t.play != nil:
		cp.Resolver, cp.DNS, cp.Commands, cp.ReadFile = t.play.Resolver(), t.play.DNS(), t.play.Commands(), t.play.ReadFile
		if recorded := t.play.Bundle().OS; recorded != "" {
			cp.OS = ws.OS(recorded)
		}
	case t.rec != nil:
		t.rec.SetOS(string(o.OS))
		cp.Resolver, cp.DNS, cp.Commands, cp.ReadFile = t.rec.Resolver(o.Resolver), t.rec.DNS(o.DNS), t.rec.Commands(o.Commands), t.rec.ReadFile(o.ReadFile)
	}
	return &cp
}

// save writes the recording (anonymized with --anonymize) once the run ended.
// It says on stderr what the bundle holds and its size.
func (t *tape) save(stderr io.Writer) error {
	if t == nil || t.rec == nil {
		return nil
	}
	b := t.rec.Bundle()
	if t.anonymize {
		b = replay.Anonymize(b)
	}
	if err := b.WriteFile(t.path); err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	size := "?"
	if st, err := os.Stat(t.path); err == nil {
		size = fmt.Sprintf("%.1f KiB", float64(st.Size())/1024)
	}
	// stderr is where the run says what it did beside the report.
	_, _ = fmt.Fprintf(stderr, "recorded %s (%s): %s\n", t.path, size, b.Summary())
	if len(b.Incomplete) > 0 {
		_, _ = fmt.Fprintf(stderr, "warning: the recording is incomplete (%d exchanges over its bounds): their replay will be ERROR\n", len(b.Incomplete))
	}
	return nil
}
