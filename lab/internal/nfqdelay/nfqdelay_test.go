package nfqdelay

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
)

// packetMsg builds an NFQNL_MSG_PACKET netlink message carrying packet id and one more
// attribute, as the kernel sends it.
func packetMsg(id uint32) []byte {
	hdr := make([]byte, 8) // nfqnl_msg_packet_hdr: id (be32), hw_protocol (be16), hook, pad
	binary.BigEndian.PutUint32(hdr, id)
	attrs := []byte{}
	for _, a := range []struct {
		typ  uint16
		data []byte
	}{{attrPacketHdr, hdr[:7]}, {9, []byte{1, 2, 3, 4, 5}}} {
		h := make([]byte, 4)
		binary.LittleEndian.PutUint16(h, uint16(4+len(a.data)))
		binary.LittleEndian.PutUint16(h[2:], a.typ)
		attrs = append(append(attrs, h...), a.data...)
		for len(attrs)%4 != 0 {
			attrs = append(attrs, 0)
		}
	}
	msg := make([]byte, 20, 20+len(attrs))
	binary.LittleEndian.PutUint32(msg, uint32(20+len(attrs)))
	binary.LittleEndian.PutUint16(msg[4:], subsysQueue<<8|msgPacket)
	return append(msg, attrs...)
}

func TestPacketIDsReadsEveryPacketOfADatagram(t *testing.T) {
	b := append(packetMsg(7), packetMsg(1<<20)...)
	assert.Equal(t, []uint32{7, 1 << 20}, packetIDs(b))
}

func TestPacketIDsIgnoresOtherMessagesAndTruncation(t *testing.T) {
	other := packetMsg(3)
	binary.LittleEndian.PutUint16(other[4:], 2) // NLMSG_ERROR
	assert.Empty(t, packetIDs(other))
	assert.Empty(t, packetIDs(packetMsg(5)[:18]))
}
