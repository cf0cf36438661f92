#include <catch2/catch.hpp>

#include "core/error.h"
#include "schedules/pipeline_trace.h"
#include "schedules/schedule.h"
#include "schedules/schedule_check.h"

using namespace triax;

TEST_CASE("GPipe and 1F1B are valid over a grid, with the textbook bubble", "[schedule]") {
  for (int p : {1, 2, 3, 4}) {
    for (int m : {1, 2, 3, 4, 8}) {
      for (const Schedule& s : {gpipe(p, m), one_f_one_b(p, m)}) {
        INFO(s.table());
        REQUIRE_NOTHROW(check_schedule(s));
        const SimulationResult sim = simulate(s, {1.0, 1.0, 0.0});
        REQUIRE(sim.finished);
        CHECK(sim.bubble_fraction == Approx(double(p - 1) / (m + p - 1)).margin(1e-12));
        CHECK(sim.makespan == Approx(2.0 * (m + p - 1)));
      }
      // Activation memory: 1F1B holds at most p micro-batches on rank 0, GPipe all m.
      CHECK(simulate(one_f_one_b(p, m)).peak_activations[0] == std::min(p, m));
      CHECK(simulate(gpipe(p, m)).peak_activations[0] == m);
    }
  }
}

TEST_CASE("interleaved 1F1B is valid and has a smaller bubble", "[schedule]") {
  for (int p : {2, 4}) {
    for (int m : {p, 2 * p, 4 * p}) {
      for (int v : {2, 3}) {
        const Schedule s = interleaved_one_f_one_b(p, m, v);
        INFO(s.table());
        REQUIRE_NOTHROW(check_schedule(s));
        // A chunk is 1/v of a stage: same total work as 1F1B with unit-cost stages.
        const double chunk = 1.0 / v;
        const SimulationResult sim = simulate(s, {chunk, chunk, 0.0});
        REQUIRE(sim.finished);
        const double plain = simulate(one_f_one_b(p, m), {1.0, 1.0, 0.0}).bubble_fraction;
        CHECK(sim.bubble_fraction < plain);
      }
    }
  }
}

// Zero-bubble schedules, at unit costs T_F = T_I = T_W = 1 (a whole backward B = 2):
//   1F1B   makespan 3m + 3(p-1), bubble (p-1)/(m+p-1)
//   ZB-H1  makespan 3m + (p-1) (Qi et al.: idle (p-1)(T_F + T_I - T_W), one third of 1F1B's
//          3(p-1)), peak p micro-batches on every rank (1F1B's peak)
//   ZB-V   two chunks per rank, each half a stage: makespan 6m + p - 1 chunk forwards, the least
//          any schedule can reach (every rank's work plus its wait for its first input), i.e. no
//          idle once a rank has started but the warm-up offset; peak 2p chunk micro-batches.
TEST_CASE("ZB-H1 and ZB-V are valid, hold 1F1B's memory, and have the published bubbles",
          "[schedule]") {
  const SimulationCosts unit{1.0, 2.0, 0.0, 0.5};  // F 1, B 2 = I 1 + W 1
  const SimulationCosts half{0.5, 1.0, 0.0, 0.5};  // a chunk: half a stage
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 4, 8, 16}) {
      INFO("p=" << p << " m=" << m);
      const Schedule h1 = zero_bubble_h1(p, m);
      REQUIRE_NOTHROW(check_schedule(h1));
      const SimulationResult zb = simulate(h1, unit);
      const SimulationResult plain = simulate(one_f_one_b(p, m), unit);
      REQUIRE(zb.finished);
      CHECK(plain.makespan == Approx(3.0 * m + 3.0 * (p - 1)));
      if (m >= p) {  // the steady state exists: the published figure
        CHECK(zb.makespan == Approx(3.0 * m + (p - 1)));
        CHECK(zb.bubble_fraction == Approx(double(p - 1) / (3 * m + p - 1)).margin(1e-12));
      }
      CHECK(zb.makespan <= plain.makespan);
      for (int r = 0; r < p; ++r) CHECK(zb.peak_activations[r] <= std::min(p, m));

      const Schedule v = zero_bubble_v(p, m);
      REQUIRE_NOTHROW(check_schedule(v));
      const SimulationResult zv = simulate(v, half);
      REQUIRE(zv.finished);
      if (m >= p) {
        CHECK(zv.makespan == Approx(0.5 * (6.0 * m + p - 1)));
        CHECK(zv.bubble_fraction == Approx(double(p - 1) / (6 * m + p - 1)).margin(1e-12));
      }
      for (int r = 0; r < p; ++r) CHECK(zv.peak_activations[r] <= 2 * p);
      // The V: rank 0 holds the first and the last stage, the loss is computed there.
      CHECK(v.stage_of(0, 1) == 2 * p - 1);
      CHECK(v.loss_rank() == 0);
    }
  }
  // The goal's row: p = 4, m = 8.
  const double one = simulate(one_f_one_b(4, 8), unit).bubble_fraction;
  CHECK(simulate(zero_bubble_h1(4, 8), unit).bubble_fraction / one == Approx(0.407).epsilon(0.01));
  CHECK(simulate(zero_bubble_v(4, 8), half).bubble_fraction / one == Approx(0.216).epsilon(0.01));
}

TEST_CASE("split backwards are checked: W after its I, never with a whole B", "[schedule]") {
  Schedule s = zero_bubble_h1(2, 2);
  auto& rank0 = s.ranks[0];
  auto w = std::find_if(rank0.begin(), rank0.end(),
                        [](const Action& a) { return a.kind == ActionKind::kBackwardWeight; });
  const Action moved = *w;
  rank0.erase(w);
  rank0.insert(rank0.begin(), moved);
  CHECK_THROWS_WITH(check_schedule(s), Catch::Contains("W mb0 stage 0 comes before its I"));
  Schedule dropped = zero_bubble_h1(2, 2);
  auto& rank1 = dropped.ranks[1];
  rank1.erase(std::find_if(rank1.begin(), rank1.end(),
                           [](const Action& a) { return a.kind == ActionKind::kBackwardWeight; }));
  CHECK_THROWS_WITH(check_schedule(dropped), Catch::Contains("lacks the W of its split backward"));
  // A schedule that holds more than it claims is caught.
  Schedule greedy = zero_bubble_h1(3, 6);
  greedy.in_flight_bound[2] = 1;
  CHECK_THROWS_WITH(check_schedule(greedy),
                    Catch::Contains("rank 2 holds 3 micro-batches' activations at once, more than "
                                    "the 1 the schedule claims"));
  CHECK_THAT(zero_bubble_h1(2, 3).table(), Catch::Contains("rank 1: F0 I0 F1 I1 W0 F2 I2 W1 W2"));
  CHECK_THAT(zero_bubble_h1(2, 3).table(), Catch::Contains("rank 0: F0 F1 I0 W0 F2 I1 W1 I2 W2"));
}

TEST_CASE("unsupported combinations name the key and what is valid", "[schedule]") {
  CHECK_THROWS_WITH(
      make_schedule("interleaved", 4, 6, 2),
      Catch::Contains("schedule.microbatches: 6 is not a multiple of parallel.pipeline=4"));
  CHECK_THROWS_WITH(make_schedule("interleaved", 2, 4, 1),
                    Catch::Contains("schedule.chunks_per_rank: 1"));
  CHECK_THROWS_WITH(make_schedule("1f1b", 2, 4, 2),
                    Catch::Contains("needs schedule.name: interleaved"));
  CHECK_THROWS_WITH(make_schedule("zigzag", 2, 4, 1),
                    Catch::Contains("valid: gpipe, 1f1b, interleaved, zbh1, zbv"));
  CHECK_THROWS_WITH(make_schedule("zbv", 2, 4, 1),
                    Catch::Contains("schedule.chunks_per_rank: 1 does not fit schedule.name: zbv"));
  CHECK_THROWS_WITH(make_schedule("zbh1", 2, 4, 2),
                    Catch::Contains("needs schedule.name: interleaved"));
  CHECK_THROWS_WITH(make_schedule("gpipe", 2, 0, 1), Catch::Contains("schedule.microbatches: 0"));
}

TEST_CASE("a missing receive is rejected before anything runs", "[schedule]") {
  Schedule s = one_f_one_b(3, 4);
  auto& rank1 = s.ranks[1];
  rank1.erase(std::find_if(rank1.begin(), rank1.end(),
                           [](const Action& a) { return a.kind == ActionKind::kRecvActivation; }));
  CHECK_THROWS_WITH(
      check_schedule(s),
      Catch::Contains("activation of micro-batch 0 for stage 1 is sent but never received"));
}

TEST_CASE("a deadlock is found by simulation and each rank's stuck action named", "[schedule]") {
  Schedule s = one_f_one_b(2, 1);
  auto& rank0 = s.ranks[0];
  // Rank 0 waits for the gradient before sending the activation that would produce it.
  const auto recv = std::find_if(rank0.begin(), rank0.end(),
                                 [](const Action& a) { return a.kind == ActionKind::kRecvGrad; });
  const Action moved = *recv;
  rank0.erase(recv);
  rank0.insert(rank0.begin(), moved);
  CHECK_THROWS_WITH(check_schedule(s), Catch::Contains("deadlock: rank 0 waits at recvG mb0") &&
                                           Catch::Contains("rank 1 waits at recvA mb0"));
}

TEST_CASE("a schedule prints as a rank x slot table", "[schedule]") {
  const std::string table = one_f_one_b(2, 3).table();
  CHECK_THAT(table, Catch::Contains("rank 0: F0 F1 B0 F2 B1 B2"));
  CHECK_THAT(table, Catch::Contains("rank 1: F0 B0 F1 B1 F2 B2"));
}

TEST_CASE("a trace becomes Chrome trace events and a measured bubble", "[schedule]") {
  // Two ranks, makespan 4: rank 0 computes 0-1 and 3-4, rank 1 computes 1-3 after waiting 0-1.
  const PipelineTrace trace = {{{ActionKind::kForward, 0, 0, 0, 1},
                                {ActionKind::kRecvGrad, 0, 0, 1, 3},
                                {ActionKind::kBackward, 0, 0, 3, 4}},
                               {{ActionKind::kRecvActivation, 0, 0, 0, 1},
                                {ActionKind::kForward, 0, 0, 1, 2},
                                {ActionKind::kBackward, 0, 0, 2, 3}}};
  CHECK(measured_bubble(trace) == Approx(1.0 - 4.0 / (2 * 4)));
  const std::string json = chrome_trace_json(trace, "test");
  CHECK_THAT(json, Catch::StartsWith("{\"traceEvents\":["));
  CHECK_THAT(json, Catch::Contains("\"name\":\"pp rank 1\""));
  CHECK_THAT(json,
             Catch::Contains(
                 "\"name\":\"wait "
                 "recvG0\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":2"));
  CHECK_THAT(json, Catch::Contains("\"name\":\"F0\",\"cat\":\"forward\""));
}

TEST_CASE("forward-only schedules are valid and hold no backward", "[schedule]") {
  for (int p : {1, 2, 4}) {
    for (int v : {1, 2}) {
      const Schedule s = forward_only(StagePlacement(PlacementShape::kLoop, p, v), 3);
      CHECK_NOTHROW(check_schedule(s));
      CHECK(simulate(s).finished);
      for (const auto& actions : s.ranks) {
        for (const Action& a : actions) CHECK(a.kind != ActionKind::kBackward);
      }
    }
  }
  // A training schedule's backwards are not allowed in a forward-only one, and vice versa.
  Schedule mixed = gpipe(2, 2);
  mixed.backward = false;
  CHECK_THROWS_WITH(check_schedule(mixed),
                    Catch::Contains("has a backward in a forward-only schedule"));
  Schedule missing = forward_only(StagePlacement(PlacementShape::kLoop, 2, 1), 2);
  missing.backward = true;
  CHECK_THROWS_WITH(check_schedule(missing), Catch::Contains("lacks its backward"));
}
