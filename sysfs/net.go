package sysfs

import "fmt"

// netdev is one network interface's identity.
type netdev struct {
	name        string
	ifindex     int
	mac, bcast  string
	mtu         int
	flags, oper string
	typ         int    // ARPHRD_*
	device      string // the PCI function's path; "" for virtual devices
}

func (s *synth) loopback() dir {
	zero := "00:00:00:00:00:00"
	return netdevDir(netdev{"lo", 1, zero, zero, 65536, "0x9", "unknown", 772, ""})
}

// ethernet is ethN, ifindex N+2 (lo is 1), on PCI function N.
func (s *synth) ethernet(i int) dir {
	mac := fmt.Sprintf("00:1b:21:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
	return netdevDir(netdev{"eth" + itoa(i), i + 2, mac, "ff:ff:ff:ff:ff:ff", 1500, "0x1003", "up", 1, pciPath(i)})
}

func netdevDir(n netdev) dir {
	d := dir{
		{"addr_assign_type", roSrc(srcZero)},
		{"addr_len", ro("6")},
		{"address", ro(n.mac)},
		{"broadcast", ro(n.bcast)},
		{"carrier", rwVal("1")},
		{"dev_id", ro("0x0")},
		{"flags", rwVal(n.flags)},
		{"ifalias", rwVal("")},
		{"ifindex", ro(itoa(n.ifindex))},
		{"iflink", ro(itoa(n.ifindex))},
		{"mtu", rwVal(itoa(n.mtu))},
		{"operstate", ro(n.oper)},
		{"statistics", dir{
			{"rx_bytes", roSrc(srcZero)}, {"rx_errors", roSrc(srcZero)}, {"rx_packets", roSrc(srcZero)},
			{"tx_bytes", roSrc(srcZero)}, {"tx_errors", roSrc(srcZero)}, {"tx_packets", roSrc(srcZero)},
		}},
		{"subsystem", link("class/net")},
		{"tx_queue_len", rwVal("1000")},
		{"type", ro(itoa(n.typ))},
		{"uevent", ro(fmt.Sprintf("INTERFACE=%s\nIFINDEX=%d", n.name, n.ifindex))},
	}
	if n.device != "" {
		d = append(d, ent{"device", link(n.device)}, ent{"duplex", ro("full")}, ent{"speed", ro("10000")})
	}
	return d
}
