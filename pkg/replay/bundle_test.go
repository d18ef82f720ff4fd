package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

func gz(t testing.TB, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestReadRefusesWhatIsNotABundleItCanRead(t *testing.T) {
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"foreign JSON":    {[]byte(`{"apiVersion":"v1","kind":"List"}`), "no \"kubectl-lanaccess-replay\" format field"},
		"not JSON":        {[]byte("hello"), "format field"},
		"newer version":   {[]byte(`{"format":"kubectl-lanaccess-replay","version":2,"tool":"v9.0.0"}`), "format version 2, this build reads up to 1 (recorded by v9.0.0"},
		"unknown field":   {[]byte(`{"format":"kubectl-lanaccess-replay","version":1,"surprise":1}`), "unknown field"},
		"relative path":   {[]byte(`{"format":"kubectl-lanaccess-replay","version":1,"api":[{"method":"GET","path":"x","status":200}]}`), "absolute path"},
		"no DNS reply":    {[]byte(`{"format":"kubectl-lanaccess-replay","version":1,"dns":[{"server":"1.2.3.4:53","name":"x","type":1,"network":"udp"}]}`), "neither a reply nor an error"},
		"broken gzip":     {[]byte{0x1f, 0x8b, 0, 1, 2}, "gzip"},
		"control in tool": {[]byte(`{"format":"kubectl-lanaccess-replay","version":7,"tool":"\u001b[31mred"}`), "recorded by ?[31mred"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.raw), "f")
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestReadBoundsTheUncompressedSize(t *testing.T) {
	// A small file that inflates past MaxBytes (a gzip bomb) is refused, not inflated.
	bomb := gz(t, bytes.Repeat([]byte{' '}, MaxBytes+10))
	require.Less(t, len(bomb), MaxFileBytes)
	_, err := Read(bytes.NewReader(bomb), "bomb")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "uncompressed")

	_, err = Read(bytes.NewReader(make([]byte, MaxFileBytes+1)), "big")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than")
}

func TestWriteThenReadRoundTrips(t *testing.T) {
	b := &Bundle{Format: Format, Version: Version, Tool: "v1", Command: "doctor", Flags: []Flag{{Name: "zone", Value: "apps.example.com"}},
		API: []API{{Method: "GET", Path: "/version", Status: 200, Body: []byte(`{"major":"1"}`)}}}
	var buf bytes.Buffer
	require.NoError(t, b.Write(&buf))
	got, err := Read(&buf, "b")
	require.NoError(t, err)
	assert.Equal(t, b.Flags, got.Flags)
	assert.JSONEq(t, `{"major":"1"}`, string(got.API[0].Body))
	assert.True(t, strings.HasPrefix(got.Summary(), "1 API exchanges"))
}

// FuzzRead: a bundle is hostile input; Read never panics, and what it accepts a player can
// index and answer from without panicking.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"format":"kubectl-lanaccess-replay","version":1,"api":[{"method":"GET","path":"/version","status":200,"body":{"a":1}}],"dns":[{"server":"1.2.3.4:53","name":"x.","type":1,"network":"udp","reply":"AAA="}],"https":[{"addr":"1.2.3.4:443","host":"x","reply":{"Status":302}}]}`))
	f.Add([]byte(`{"format":"kubectl-lanaccess-replay","version":1,"execs":[{"namespace":"a","pod":"b","command":["x"],"error":{"kind":"exit","code":1}}]}`))
	f.Add(gz(f, []byte(`{"format":"kubectl-lanaccess-replay","version":1}`)))
	f.Add([]byte(`{"format":"kubectl-lanaccess-replay","version":1,"calls":[{"method":"prober.SendDF","args":{"to":"10.96.0.10:53","size":1304},"result":{"Size":1304,"State":"silent"}},` +
		`{"method":"prober.RoutingTable","result":"Iface\tDestination\tGateway\neth0\t0008080A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n","error":{"kind":"errno","what":"ENETUNREACH"}}],` +
		`"certificates":["AAAA"],"https":[{"addr":"1.2.3.4:443","host":"x","reply":{"Status":200},"chain":[0]}]}`))
	f.Fuzz(func(_ *testing.T, raw []byte) {
		b, err := Read(bytes.NewReader(raw), "fuzz")
		if err != nil {
			return
		}
		p := NewPlayer(b)
		for _, x := range b.API {
			_, _ = p.take(apiKey(x.Method, x.Path, x.ReqBody))
		}
		for _, x := range b.Execs {
			_ = x.Error.Err()
		}
		ctx := context.Background()
		for _, x := range b.DNS {
			if server, err := netip.ParseAddrPort(x.Server); err == nil {
				_, _ = p.DNS().Query(ctx, server, x.Name, x.Type, x.Network)
			}
		}
		for _, x := range b.HTTPS {
			if addr, err := netip.ParseAddrPort(x.Addr); err == nil {
				_, _ = p.HTTPS().Get(ctx, probe.HTTPSRequest{Addr: addr, Host: x.Host, Path: x.Path, Requests: x.Requests})
			}
		}
		for _, x := range b.Calls {
			var answer any
			_ = p.Call(x.Method, x.Args, &answer)
		}
		_ = Anonymize(b)
	})
}
