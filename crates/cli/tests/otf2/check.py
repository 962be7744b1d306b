"""Reads an OTF2 archive with OTF2's own Python reader (python3-otf2) and
prints, as JSON, what the Rust test asserts on: per location the events by
type and whether their times never go back; the point-to-point records
paired as OTF2 readers pair them (communicator, sender, receiver, tag, in
each location's order) with their lengths; the request records paired by request id; the
collective begin/end records and what their ends say; the non-blocking collective records
paired by request id, and what their completions say."""

import collections
import json
import sys

import otf2

locations = collections.defaultdict(lambda: {"events": collections.Counter(), "monotonic": True})
last_time = {}
# Per channel (communicator, sender, receiver, tag), in each location's order.
sends = collections.defaultdict(list)
receives = collections.defaultdict(list)
open_requests = collections.defaultdict(set)
unpaired_requests = 0
collectives = []  # (location, op, comm, root, sent, received)
open_collectives = collections.Counter()
open_collective_requests = collections.defaultdict(set)
unpaired_collective_requests = 0
collective_completions = []  # (location, op, comm, root, sent, received)


def member(comm, rank, me):
    members = comm.group.members
    return members[rank].name if members else me


with otf2.reader.open(sys.argv[1]) as trace:
    clock = trace.definitions.clock_properties
    defined = {l.name: l.number_of_events for l in trace.definitions.locations}
    comms = sorted(c.name for c in trace.definitions.comms)
    for location, event in trace.events:
        me = location.name
        kind = type(event).__name__
        info = locations[me]
        info["events"][kind] += 1
        if event.time < last_time.get(me, 0):
            info["monotonic"] = False
        last_time[me] = event.time
        if kind in ("MpiSend", "MpiIsend"):
            key = (event.communicator.name, me, member(event.communicator, event.receiver, me), event.msg_tag)
            sends[key].append(event.msg_length)
        if kind in ("MpiRecv", "MpiIrecv"):
            key = (event.communicator.name, member(event.communicator, event.sender, me), me, event.msg_tag)
            receives[key].append(event.msg_length)
        if kind in ("MpiIsend", "MpiIrecvRequest"):
            open_requests[me].add(event.request_id)
        if kind in ("MpiIsendComplete", "MpiIrecv"):
            if event.request_id in open_requests[me]:
                open_requests[me].remove(event.request_id)
            else:
                unpaired_requests += 1
        if kind == "MpiCollectiveBegin":
            open_collectives[me] += 1
        if kind in ("MpiCollectiveEnd", "NonBlockingCollectiveComplete"):
            root = None if event.root == 0xFFFFFFFF else event.root
            end = [me, str(event.collective_op).split(".")[-1], event.communicator.name, root,
                   event.size_sent, event.size_received]
        if kind == "MpiCollectiveEnd":
            open_collectives[me] -= 1
            collectives.append(end)
        if kind == "NonBlockingCollectiveRequest":
            open_collective_requests[me].add(event.request_id)
        if kind == "NonBlockingCollectiveComplete":
            if event.request_id in open_collective_requests[me]:
                open_collective_requests[me].remove(event.request_id)
            else:
                unpaired_collective_requests += 1
            collective_completions.append(end)

# Paired in order per channel, as OTF2 readers pair them (not by time:
# clocks of different ranks need not agree on a message's order).
received = [pair for key in sends for pair in zip(sends[key], receives.get(key, []))]
unmatched_sends = sum(max(0, len(q) - len(receives.get(k, []))) for k, q in sends.items())
unmatched_receives = sum(max(0, len(q) - len(sends.get(k, []))) for k, q in receives.items())

print(json.dumps({
    "timer_resolution": clock.timer_resolution,
    "global_offset": clock.global_offset,
    "trace_length": clock.trace_length,
    "defined_events": defined,
    "comms": comms,
    "locations": {k: {"events": dict(v["events"]), "monotonic": v["monotonic"]} for k, v in locations.items()},
    "messages": len(received),
    "length_mismatches": sum(1 for s, r in received if s != r),
    "unmatched_sends": unmatched_sends,
    "unmatched_receives": unmatched_receives,
    "open_requests": sum(len(s) for s in open_requests.values()),
    "unpaired_requests": unpaired_requests,
    "open_collectives": sum(abs(n) for n in open_collectives.values()),
    "collectives": collectives,
    "open_collective_requests": sum(len(s) for s in open_collective_requests.values()),
    "unpaired_collective_requests": unpaired_collective_requests,
    "collective_completions": collective_completions,
}))
