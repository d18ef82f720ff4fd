package facts

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordedSweep is the output of a sweep script recorded over a real OpenVPN tunnel
// (record_test.go, TestRecordMTU).
func recordedSweep(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vpn", name+".json"))
	require.NoError(t, err)
	var r struct {
		Stdout string `json:"stdout"`
	}
	require.NoError(t, json.Unmarshal(b, &r))
	return r.Stdout
}

func TestASweepScriptsOutputIsReadBySize(t *testing.T) {
	sw := parsePingSweep(recordedSweep(t, "mtu-blackhole-sweep"), nil)
	require.Equal(t, 1500, sw.mtu)
	assert.True(t, sw.ended)
	states := map[int]SizeState{}
	for _, r := range sw.results(sweepSizes(sw.mtu)) {
		states[r.Size] = r.State
	}
	assert.Equal(t, map[int]SizeState{84: SizePassed, 576: SizePassed, 1200: SizePassed, 1280: SizePassed,
		1360: SizeSilent, 1400: SizeSilent, 1440: SizePassed, 1500: SizePassed}, states)
}

// A size whose ping did not finish (the exec's deadline cut the script) is unknown, not
// silent; lines the script did not ask for, and a size told twice, change nothing.
func TestAnUnfinishedOrForeignSizeIsNotSilent(t *testing.T) {
	out := "@@mtu 1400\n@@84 1 packets transmitted, 1 received\n@@84 exit 0\n@@84 exit 1\n" +
		"@@1500 1 received\n@@1500 exit 0\n@@9999 exit 0\n@@576 PING 10.8.0.2\n@@mtu 9000\n"
	sw := parsePingSweep(out, nil)
	assert.Equal(t, 1400, sw.mtu, "the first MTU line")
	assert.False(t, sw.ended)
	rs := measured(sw.results(sweepSizes(1400)))
	require.Len(t, rs, 1)
	assert.Equal(t, SizeResult{Size: 84, State: SizePassed}, rs[0])
	assert.Empty(t, parsePingSweep("@@mtu 12\n@@84 exit 0\n", nil).exit, "an MTU below 576 is not read")
}

func TestAPingWithoutDontFragmentLeavesTheSweepUnmeasured(t *testing.T) {
	sw := parsePingSweep("@@mtu 1500\n@@84 ping: invalid option -- 'M'\n@@84 exit 1\n@@end\n", nil)
	assert.Contains(t, sw.unmeasured(), "this ping cannot set Don't Fragment (-M do)")
}

// The script carries nothing but the interface, the address and numbers.
func TestTheSweepScriptNamesOnlyWhatItWasGiven(t *testing.T) {
	s := pingSweepScript("tun0", netip.MustParseAddr("10.8.0.2"), nil)
	assert.Contains(t, s, "cat /sys/class/net/tun0/mtu")
	assert.Contains(t, s, "for s in 84 576 1200 1280 1360 1400 1440; do")
	r := pingSweepScript("", netip.MustParseAddr("10.8.0.2"), []int{1288, 1296})
	assert.NotContains(t, r, "/sys/class/net")
	assert.Contains(t, r, "p 1288 & p 1296 & wait; echo @@end")
}

// The sweep's output is the pod's, hostile: whatever it prints, only sizes asked for come
// back, each once, in the order asked, with a known state.
func FuzzParsePingSweep(f *testing.F) {
	for _, name := range []string{"mtu-blackhole-sweep", "mtu-blackhole-refine", "mtu-ok-sweep"} {
		f.Add(recordedSweep(f, name))
	}
	f.Add("@@mtu 1500\n@@84 exit 0\n@@1500 mtu=1400\n@@1500 exit 1\n@@end\n")
	f.Fuzz(func(t *testing.T, out string) {
		if sw := parsePingSweep(out, nil); sw.mtu == 0 {
			if len(sw.exit) != 0 {
				t.Fatalf("sizes read without an MTU: %v", sw.exit)
			}
		} else {
			checkSweep(t, sw, sweepSizes(sw.mtu))
		}
		checkSweep(t, parsePingSweep(out, []int{1288, 1296, 1304}), []int{1288, 1296, 1304})
	})
}

// checkSweep fails unless sw holds only sizes asked, each bounded, and its results are one per
// size asked, in that order, with a known state.
func checkSweep(t *testing.T, sw pingSweep, asked []int) {
	t.Helper()
	if sw.mtu != 0 && (sw.mtu < 576 || sw.mtu > 65535) {
		t.Fatalf("MTU %d out of range", sw.mtu)
	}
	for size, text := range sw.text {
		if !slices.Contains(asked, size) || len(text) > pingSweepTextCap {
			t.Fatalf("size %d not asked, or its text unbounded (%d bytes)", size, len(text))
		}
	}
	rs := sw.results(asked)
	if len(rs) != len(asked) {
		t.Fatalf("%d results for %d sizes", len(rs), len(asked))
	}
	for i, r := range rs {
		if r.Size != asked[i] {
			t.Fatalf("result %d is size %d, asked %d", i, r.Size, asked[i])
		}
		if !slices.Contains([]SizeState{"", SizePassed, SizeSilent, SizeTooBig}, r.State) {
			t.Fatalf("unknown state %q", r.State)
		}
	}
}
