package sysfs

// busDir is bus/: each bus links its devices and its drivers' devices.
func (s *synth) busDir() dir {
	nics := each(s.Netdevs, s.pciLink)
	disks := each(s.Disks, func(i int) (string, spec) { return s.pciLink(s.Netdevs + i) })
	return dir{
		{"cpu", bus(each(s.CPUs, s.cpuLink), dir{{"processor", driver(each(s.CPUs, s.cpuLink), "")}})},
		{"memory", bus(eachLink(s.MemBlocks, memoryPath, s.memName), dir{})},
		{"node", bus(each(s.NUMANodes, s.nodeLink), dir{})},
		{"pci", bus(each(s.Netdevs+s.Disks, s.pciLink), dir{
			{nicPCI.driver, driver(nics, nicPCI.driver)},
			{nvmePCI.driver, driver(disks, nvmePCI.driver)},
		})},
	}
}

func bus(devices ent, drivers dir) dir {
	return dir{
		{"devices", dir{devices}},
		{"drivers", drivers},
		{"drivers_autoprobe", rwVal("1")},
		{"drivers_probe", wo()},
		{"uevent", wo()},
	}
}

func driver(devices ent, module string) dir {
	d := dir{{"bind", wo()}, {"new_id", wo()}, {"remove_id", wo()}, {"uevent", wo()}, {"unbind", wo()}, devices}
	if module != "" {
		d = append(d, ent{"module", link("module/" + module)})
	}
	return d
}

// classDir is class/: links to the devices of each class.
func (s *synth) classDir() dir {
	return dir{
		{"block", dir{each(s.Disks, func(i int) (string, spec) { return s.diskName(i), link(s.diskPath(i)) })}},
		{"net", dir{
			{"lo", link("devices/virtual/net/lo")},
			each(s.Netdevs, func(i int) (string, spec) { return "eth" + itoa(i), link(s.ethPath(i)) }),
		}},
		{"nvme", dir{each(s.Disks, func(i int) (string, spec) { return "nvme" + itoa(i), link(s.nvmePath(i)) })}},
	}
}
