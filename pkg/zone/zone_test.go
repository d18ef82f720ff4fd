package zone_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

func TestParseFoldsCaseAndTakesOneTrailingDot(t *testing.T) {
	for _, in := range []string{"apps.example.com", "Apps.Example.COM.", "apps.example.com."} {
		z, err := zone.Parse(in)
		require.NoError(t, err, in)
		assert.Equal(t, "apps.example.com", z.String())
		assert.Equal(t, "apps.example.com.", z.FQDN())
		assert.False(t, z.IsZero())
	}
	z, err := zone.Parse("_lan.intra-net.example")
	require.NoError(t, err)
	assert.Equal(t, "_lan.intra-net.example.", z.FQDN())
}

func TestParseRefusesWhatIsNotAHostName(t *testing.T) {
	for _, in := range []string{
		"", ".", "..", "apps..example.com", "apps.example.com..",
		"apps.example.com\n", "apps.example.com\nforward . 1.1.1.1", "apps\r.example.com", "apps\x00.example.com",
		" apps.example.com", "apps example.com", "apps.example.com\t",
		"apps.example.com{", "apps.example.com }", "a;b.example.com", "a#b.example.com", `a"b.example.com`,
		"a'b.example.com", "a(b).example.com", "$zone.example.com", `a\.example.com`, "a`b`.example.com",
		"*.example.com", "-apps.example.com", "apps-.example.com", "appś.example.com",
		strings.Repeat("a", 64) + ".example.com",
		strings.Repeat("abcdefghi.", 25) + "example", // 260 octets
	} {
		_, err := zone.Parse(in)
		assert.Error(t, err, "%q", in)
	}
}

func TestParseTakesTheLongestNames(t *testing.T) {
	label := strings.Repeat("a", 63)
	z, err := zone.Parse(label + ".example.com")
	require.NoError(t, err)
	assert.Equal(t, label+".example.com", z.String())
	long := strings.Repeat("abcdefghi.", 24) + "example.com" // 251 octets
	_, err = zone.Parse(long + ".")
	require.NoError(t, err)
}

func TestContainsTheApexAndNamesBelowIt(t *testing.T) {
	z := zone.MustParse("apps.example.com")
	for _, in := range []string{"apps.example.com", "APPS.example.com.", "a.apps.example.com", "b.a.Apps.Example.Com."} {
		assert.True(t, z.Contains(in), in)
	}
	for _, in := range []string{"", ".", "example.com", "xapps.example.com", "apps.example.com.evil", "apps.example.co"} {
		assert.False(t, z.Contains(in), in)
	}
	assert.False(t, zone.Zone{}.Contains("apps.example.com"))
}

func TestTheZeroZoneIsEmptyInBothForms(t *testing.T) {
	var z zone.Zone
	assert.True(t, z.IsZero())
	assert.Empty(t, z.String())
	assert.Empty(t, z.FQDN())
}
