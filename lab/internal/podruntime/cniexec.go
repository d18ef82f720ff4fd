package podruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// nodeExec runs CNI plugins in a node's network namespace, where a node's runtime runs them:
// ptp's node end of the veth pair, its routes and host-local's leases are the node's. The lab's
// daemon runs in the initial namespace, so each plugin is started under `ip netns exec <node>`;
// otherwise it is libcni's invoke.RawExec (stdin the configuration, CNI_* in the environment,
// stdout the result, or a CNI error object when the plugin fails).
type nodeExec struct {
	NS string
}

var _ invoke.Exec = nodeExec{}

// argv is the command that runs the plugin in the node's namespace.
func (e nodeExec) argv(pluginPath string) []string {
	return []string{"ip", "netns", "exec", e.NS, pluginPath}
}

func (e nodeExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	argv := e.argv(pluginPath)
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // the plugin is one of the lab's, found in its cache directory
	c.Env = environ
	c.Stdin = bytes.NewReader(stdinData)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return nil, pluginErr(err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// pluginErr is the plugin's own error object when it printed one (what RawExec returns).
func pluginErr(err error, stdout, stderr []byte) error {
	var e types.Error
	if len(stdout) > 0 && json.Unmarshal(stdout, &e) == nil && e.Msg != "" {
		return &e
	}
	return fmt.Errorf("CNI plugin: %w: %s", err, strings.TrimSpace(string(stderr)))
}

func (e nodeExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

func (e nodeExec) Decode(jsonBytes []byte) (version.PluginInfo, error) {
	return (&version.PluginDecoder{}).Decode(jsonBytes)
}
