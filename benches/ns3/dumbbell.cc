// The ns-3 side of benches/ns3_dumbbell.sh: benches/ns3/dumbbell.toml's dumbbell in ns-3.37.
//
// N bulk TCP flows (BulkSend → PacketSink) cross one point-to-point bottleneck; every other
// link is fast and has no delay, so the bottleneck's rate, delay and drop-tail queue are the
// path, as in cclab's simulator. What is matched to cclab's defaults, and why:
//   - 1448-byte segments with TCP timestamps: 52 bytes of TCP/IP headers, 1500-byte IP packets
//     (cclab's MSS and DATA_HEADER); ns-3's point-to-point adds a 2-byte PPP header on the wire;
//   - an initial window of 10 segments, an ACK per segment (cclab's delayed_ack = false; ns-3's
//     default DelAckCount is 2), a 200 ms minimum RTO (ns-3's default is 1 s), SACK on, no
//     pacing, send and receive buffers large enough never to limit the window;
//   - the bottleneck's queue: a drop-tail FifoQueueDisc (not ns-3's default pfifo_fast) in
//     front of a one-packet device queue, two packets shorter than cclab's limit: cclab counts
//     the packet in service against it, ns-3 holds that one and the next in the device.
// Nothing is traced or logged: the run prints one `key=value` line per figure at the end.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <ctime>
#include <cstdint>
#include <iostream>
#include <string>

using namespace ns3;

namespace
{

double
SecondsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t flows = 100;
    std::string rate = "1Gbps";
    std::string delay = "10ms"; // one-way: the RTT is twice this
    uint32_t queuePackets = 1667;
    double duration = 10.0;
    double every = 0.01; // seconds between flow starts
    std::string tcp = "TcpNewReno";
    uint32_t mss = 1448;
    std::string topology = "shared";
    uint32_t bufBytes = 16 << 20;

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of bulk TCP flows", flows);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("delay", "bottleneck one-way propagation delay", delay);
    cmd.AddValue("queue", "bottleneck limit in packets, as cclab counts it (with the one in service)",
                 queuePackets);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("every", "seconds between flow starts", every);
    cmd.AddValue("tcp", "TCP congestion control: TcpNewReno or TcpCubic", tcp);
    cmd.AddValue("mss", "segment size in bytes", mss);
    cmd.AddValue("buffer", "TCP send and receive buffer, bytes", bufBytes);
    cmd.AddValue("topology", "shared (2 nodes) or dumbbell (a node per host)", topology);
    cmd.Parse(argc, argv);
    if (queuePackets < 3)
    {
        std::cerr << "dumbbell: --queue must be at least 3 packets\n";
        return 2;
    }

    auto t0 = std::chrono::steady_clock::now();

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName("ns3::" + tcp)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(bufBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(bufBytes));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));

    // The bottleneck joins two routers (with --topology=dumbbell, hosts hang off them).
    NodeContainer routers;
    routers.Create(2);
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue(rate));
    bottleneck.SetChannelAttribute("Delay", StringValue(delay));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));

    // Access links: 100 Gbit/s (a 1500-byte packet in 0.12 µs), no delay, room for any burst.
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
    access.SetChannelAttribute("Delay", StringValue("0s"));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100000p"));

    // "shared": the routers are the hosts, every flow's sockets on them (cclab's own model:
    // senders feed the bottleneck queue directly). "dumbbell": one sender and one receiver
    // node per flow, as ns-3's PointToPointDumbbellHelper builds it, whose routers then have
    // flows + 1 interfaces and routes to scan for every packet.
    NodeContainer senders;
    NodeContainer receivers;
    if (topology == "shared")
    {
        for (uint32_t i = 0; i < flows; ++i)
        {
            senders.Add(routers.Get(0));
            receivers.Add(routers.Get(1));
        }
    }
    else if (topology == "dumbbell")
    {
        senders.Create(flows);
        receivers.Create(flows);
    }
    else
    {
        std::cerr << "dumbbell: --topology must be shared or dumbbell, not " << topology << "\n";
        return 2;
    }
    InternetStackHelper stack;
    stack.InstallAll();

    Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
    Ipv4InterfaceContainer coreAddresses = addresses.Assign(core);
    addresses.NewNetwork();
    Ipv4InterfaceContainer sinkAddresses;
    for (uint32_t i = 0; i < flows; ++i)
    {
        if (topology == "shared")
        {
            sinkAddresses.Add(coreAddresses.Get(1));
            continue;
        }
        addresses.Assign(access.Install(senders.Get(i), routers.Get(0)));
        addresses.NewNetwork();
        Ipv4InterfaceContainer in = addresses.Assign(access.Install(routers.Get(1), receivers.Get(i)));
        addresses.NewNetwork();
        sinkAddresses.Add(in.Get(1));
    }
    // Addressing installed pfifo_fast on every device; the bottleneck's is a drop-tail FIFO.
    TrafficControlHelper().Uninstall(core.Get(0));
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc",
                          "MaxSize",
                          StringValue(std::to_string(queuePackets - 2) + "p"));
    Ptr<QueueDisc> bottleneckQueue = fifo.Install(core.Get(0)).Get(0);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    ApplicationContainer sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        const uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(receivers.Get(i)));

        BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(sinkAddresses.GetAddress(i), port));
        source.SetAttribute("MaxBytes", UintegerValue(0));
        source.SetAttribute("SendSize", UintegerValue(mss));
        ApplicationContainer app = source.Install(senders.Get(i));
        app.Start(Seconds(i * every));
        app.Stop(Seconds(duration));
    }
    sinks.Start(Seconds(0));

    const double setupSecs = SecondsSince(t0);
    auto t1 = std::chrono::steady_clock::now();
    const std::clock_t c1 = std::clock();
    Simulator::Stop(Seconds(duration));
    Simulator::Run();
    const double runSecs = SecondsSince(t1);
    const double runCpuSecs = double(std::clock() - c1) / CLOCKS_PER_SEC;

    uint64_t received = 0;
    for (uint32_t i = 0; i < sinks.GetN(); ++i)
    {
        received += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    // Every data packet passes the queue disc: what it sent is what crossed the bottleneck.
    const QueueDisc::Stats& stats = bottleneckQueue->GetStats();
    const uint64_t sent = stats.nTotalSentPackets;
    const uint64_t dropped = stats.nTotalDroppedPackets;

    std::cout << "engine=ns-3\n"
              << "tcp=" << tcp << "\n"
              << "flows=" << flows << "\n"
              << "topology=" << topology << "\n"
              << "sim_seconds=" << duration << "\n"
              << "events=" << Simulator::GetEventCount() << "\n"
              << "setup_wall_secs=" << setupSecs << "\n"
              << "run_wall_secs=" << runSecs << "\n"
              << "run_cpu_secs=" << runCpuSecs << "\n"
              << "bottleneck_packets=" << sent << "\n"
              << "bottleneck_drops=" << dropped << "\n"
              << "goodput_bytes=" << received << "\n";
    Simulator::Destroy();
    return 0;
}
