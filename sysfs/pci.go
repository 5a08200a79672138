package sysfs

import "fmt"

// pciKind is what a PCI function is.
type pciKind struct {
	driver         string
	vendor, device int
	class          int
}

var (
	nicPCI  = pciKind{"ixgbe", 0x8086, 0x10fb, 0x020000}
	nvmePCI = pciKind{"nvme", 0x144d, 0xa80a, 0x010802}
)

// PCI functions are numbered k = 0.. over the NICs then the disks, 30 to a
// root bus (slots 0 and 1 are the host bridge's): function k is
// 0000:BB:DD.0 with BB = k/30 and DD = 2 + k%30, under devices/pci0000:BB,
// and on NUMA node k % NUMANodes.
const pciPerBus = 30

func (s *synth) pciRoots() int { return (s.Netdevs + s.Disks + pciPerBus - 1) / pciPerBus }

func (s *synth) pciRoot(bus int) (string, spec) {
	n := min(pciPerBus, s.Netdevs+s.Disks-bus*pciPerBus)
	return fmt.Sprintf("pci0000:%02x", bus), dir{each(n, func(j int) (string, spec) { return s.pciDevice(bus*pciPerBus + j) })}
}

func pciAddr(k int) string { return fmt.Sprintf("0000:%02x:%02x.0", k/pciPerBus, 2+k%pciPerBus) }

func pciPath(k int) string {
	return fmt.Sprintf("devices/pci0000:%02x/%s", k/pciPerBus, pciAddr(k))
}

func (s *synth) ethPath(i int) string { return pciPath(i) + "/net/eth" + itoa(i) }

func (s *synth) nvmePath(i int) string { return pciPath(s.Netdevs+i) + "/nvme/nvme" + itoa(i) }

func (s *synth) pciLink(k int) (string, spec) { return pciAddr(k), link(pciPath(k)) }

// pciDevice is PCI function k: a NIC with its net/ethN, or an NVMe
// controller with its nvme/nvmeN.
func (s *synth) pciDevice(k int) (string, spec) {
	kind, child := nicPCI, ent{"net", dir{{"eth" + itoa(k), s.ethernet(k)}}}
	if i := k - s.Netdevs; i >= 0 {
		kind, child = nvmePCI, ent{"nvme", dir{{"nvme" + itoa(i), s.nvmeCtrl(i)}}}
	}
	node := k % s.NUMANodes
	return pciAddr(k), dir{
		{"class", ro(fmt.Sprintf("0x%06x", kind.class))},
		{"device", ro(fmt.Sprintf("0x%04x", kind.device))},
		{"driver", link("bus/pci/drivers/" + kind.driver)},
		{"enable", rwVal("1")},
		{"irq", ro(itoa(16 + k%16))},
		{"local_cpulist", roSrc(s.nodeMaps[node].list)},
		{"local_cpus", roSrc(s.nodeMaps[node].mask)},
		{"numa_node", ro(itoa(node))},
		{"subsystem", link("bus/pci")},
		{"uevent", ro(fmt.Sprintf("DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SLOT_NAME=%s",
			kind.driver, kind.class, kind.vendor, kind.device, pciAddr(k)))},
		{"vendor", ro(fmt.Sprintf("0x%04x", kind.vendor))},
		child,
	}
}
