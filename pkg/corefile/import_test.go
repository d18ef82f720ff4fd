package corefile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/caddy/caddyfile"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// k3sFiles is what k3s's CoreDNS pod sees: ConfigMap coredns at /etc/coredns (Corefile,
// NodeHosts) and the optional coredns-custom at /etc/coredns/custom.
func k3sFiles(t *testing.T, custom map[string]string) *Files {
	t.Helper()
	f := NewFiles()
	f.MountVolume("/etc/coredns", map[string]File{
		"Corefile":  {Content: string(loadCorefile(t, "k3s-imports.Corefile")), Object: "ConfigMap kube-system/coredns", Key: "Corefile"},
		"NodeHosts": {Content: "10.0.10.11 node-1\n", Object: "ConfigMap kube-system/coredns", Key: "NodeHosts"},
	})
	files := map[string]File{}
	for k, v := range custom {
		files[k] = File{Content: v, Object: "ConfigMap kube-system/coredns-custom", Key: k}
	}
	f.MountVolume("/etc/coredns/custom", files)
	return f
}

const lanServer = `apps.example.com:53 {
    template IN A {
        answer "{{ .Name }} 60 IN A 10.0.10.11"
    }
    template ANY ANY {
        rcode NOERROR
    }
}
`

func TestImportsAreReadFromThePodsConfigMapsNotFromThisMachine(t *testing.T) {
	c, err := Load("coredns", k3sFiles(t, map[string]string{"lan.server": lanServer}), "/etc/coredns/Corefile")
	require.NoError(t, err)
	assert.True(t, c.Starts(), "%v", c.Problems)
	assert.Empty(t, c.Incomplete)
	require.Len(t, c.Blocks, 2, "the . block and the imported zone block")
	zone := c.Blocks[1]
	assert.Equal(t, "/etc/coredns/custom/lan.server", zone.File)
	assert.Equal(t, 1, zone.Line)
	assert.Equal(t, "/etc/coredns/custom/lan.server", zone.Templates[0].File)
	assert.Equal(t, []string{"apps.example.com."}, c.TemplateAZones())
	require.Len(t, c.Imports, 2)
	assert.Empty(t, c.Imports[0].Matched, "no *.override")
	assert.Equal(t, []string{"/etc/coredns/custom/lan.server"}, c.Imports[1].Matched)
	require.Len(t, c.Warnings, 1)
	assert.Contains(t, c.Warnings[0].Message, "No files matching import glob pattern: /etc/coredns/custom/*.override")

	o := ask(c, "grafana.apps.example.com", dns.TypeA, "53")
	assert.Equal(t, addrs(t, "10.0.10.11"), o.Addrs(), o.Describe())
	assert.True(t, ask(c, "example.org", dns.TypeA, "53").Forwarded)
	assert.False(t, ask(c, "kubernetes.default.svc.cluster.local", dns.TypeA, "53").Forwarded)
	assert.True(t, ask(c, "node-1", dns.TypeA, "53").Known(), "NodeHosts is read from the ConfigMap")
}

func TestAnOverrideIsImportedInsideTheDotBlock(t *testing.T) {
	override := "template IN A apps.example.com {\n  answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n}\n"
	c, err := Load("coredns", k3sFiles(t, map[string]string{"lan.override": override}), "/etc/coredns/Corefile")
	require.NoError(t, err)
	require.Len(t, c.Blocks, 1)
	require.Len(t, c.Blocks[0].Templates, 1)
	assert.Equal(t, []string{"apps.example.com."}, c.Blocks[0].Templates[0].Zones)
	o := ask(c, "grafana.apps.example.com", dns.TypeA, "53")
	assert.Equal(t, addrs(t, "10.0.10.11"), o.Addrs(), o.Describe())
	// cache 30 comes before template in the chain: it caps the template's TTL.
	assert.Equal(t, uint32(30), o.Records[0].Header().Ttl)
	assert.True(t, ask(c, "grafana.apps.example.com", dns.TypeAAAA, "53").Forwarded, "no zone catch-all: AAAA goes to forward")
}

func TestAZoneDefinedTwiceThroughAnImportStopsCoreDNS(t *testing.T) {
	files := k3sFiles(t, map[string]string{"lan.server": lanServer})
	cf, _ := files.Read("/etc/coredns/Corefile")
	files.MountVolume("/etc/coredns", map[string]File{"Corefile": {Content: cf.Content + lanServer}})
	c, err := Load("coredns", files, "/etc/coredns/Corefile")
	require.NoError(t, err)
	require.False(t, c.Starts())
	assert.Equal(t, "cannot serve dns://apps.example.com.:53 - it is already defined", c.Problems[0].Message)
}

// The other import rules are corefiletest.Rules, run on the real binary too.
func TestImportOfAPathTheAPIDoesNotShowIsUnknown(t *testing.T) {
	vol := func(files map[string]string) *Files {
		f := NewFiles()
		m := map[string]File{}
		for k, v := range files {
			m[k] = File{Content: v}
		}
		f.MountVolume("/etc/coredns", m)
		return f
	}
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
		check   func(t *testing.T, c *Corefile)
	}{
		{name: "a path outside the pod's ConfigMaps is unknown, not missing",
			files: map[string]string{"Corefile": "import /opt/extra/*.server\n.:53 {\n whoami\n}\n"},
			check: func(t *testing.T, c *Corefile) {
				t.Helper()
				require.Len(t, c.Incomplete, 1)
				assert.Contains(t, c.Incomplete[0], "/opt/extra")
				assert.Contains(t, ask(c, "x", dns.TypeA, "53").Unknown, "/opt/extra")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load("x", vol(tt.files), "/etc/coredns/Corefile")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestTheConfFileMustExistInThePod(t *testing.T) {
	f := NewFiles()
	f.MountVolume("/etc/coredns", map[string]File{"Corefile.lan": {Content: "a {\n whoami\n}\n"}})
	_, err := Load("x", f, "/etc/coredns/Corefile")
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	assert.Contains(t, pe.Msg, "open /etc/coredns/Corefile: no such file or directory")
}

// The grouping parser follows caddy's step by step; on every Corefile that imports no file,
// both must give the same server blocks and the same tokens per directive, or the same error.
func TestGroupingMatchesCaddysParserOnEveryTestdataCorefile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corefiles", "*.Corefile"))
	require.NoError(t, err)
	inputs := make([][]byte, 0, len(files)+1)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs = append(inputs, b)
	}
	inputs = append(inputs, []byte("(s) {\n errors\n}\na:53 {\n import s\n kubernetes cluster.local {\n  fallthrough\n }\n}\n"))
	for _, in := range inputs {
		sameAsCaddy(t, in)
	}
}

func sameAsCaddy(t *testing.T, src []byte) {
	t.Helper()
	if bytes.Contains(src, []byte("import /")) || bytes.Contains(src, []byte("{$")) || bytes.Contains(src, []byte("{%")) {
		return // caddy would read this machine's files or environment
	}
	want, wantErr := caddyfile.Parse("", bytes.NewReader(src), Directives)
	g := newGrouper(nil, "", src)
	got, gotErr := g.parseAll()
	if wantErr != nil || gotErr != nil {
		require.Error(t, gotErr, "caddy: %v", wantErr)
		require.Error(t, wantErr, "grouper: %v", gotErr)
		var pe *ParseError
		require.True(t, errors.As(gotErr, &pe))
		assert.Contains(t, wantErr.Error(), pe.Msg)
		return
	}
	require.Len(t, got, len(want))
	for i := range want {
		var keys []string
		for _, k := range got[i].keys {
			keys = append(keys, k.Text)
		}
		assert.Equal(t, want[i].Keys, keys)
		for dir, toks := range want[i].Tokens {
			assert.Equal(t, toks, got[i].tokens(dir), "block %d directive %s", i, dir)
		}
		for _, e := range got[i].entries {
			assert.Contains(t, want[i].Tokens, e.dir)
		}
	}
}

func TestAnImportGraphLargerThanDoctorReadsIsUnknownNotAnError(t *testing.T) {
	f := NewFiles()
	files := map[string]File{"Corefile": {Content: "import /etc/coredns/d0\n"}}
	for i := range 12 {
		// each level imports the next twice: 2^12 imports, no loop
		next := fmt.Sprintf("/etc/coredns/d%d", i+1)
		files[fmt.Sprintf("d%d", i)] = File{Content: "import " + next + "\nimport " + next + "\n"}
	}
	files["d12"] = File{Content: "# leaf\n"}
	f.MountVolume("/etc/coredns", files)
	_, err := Load("x", f, "/etc/coredns/Corefile")
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.True(t, pe.Unknown, "doctor's bound, not CoreDNS's refusal")
}
