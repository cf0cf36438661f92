// `triax train CONFIG`: the job (job/job_start.h), its plan and the training loop.
#include "tools/commands/command.h"

#include <chrono>
#include <optional>

#include "checkpoint/location.h"
#include "checkpoint/resume.h"
#include "core/bf16_matmul.h"
#include "core/compute_threads.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/mixed_precision.h"
#include "core/run_paths.h"
#include "core/strings.h"
#include "job/heartbeat.h"
#include "job/job_start.h"
#include "job/output_check.h"
#include "job/rank_table.h"
#include "job/run_dir_lock.h"
#include "job/run_outputs.h"
#include "job/supervisor_hold.h"
#include "parallel/parallel_context.h"
#include "parallel/ps/server_client.h"
#include "parallel/ps/server_topology.h"
#include "tools/auto_layout.h"
#include "train/freeze.h"
#include "train/param_server.h"
#include "train/relayout.h"
#include "train/run_plan.h"
#include "train/training.h"

namespace triax {

namespace {

const auto kProcessStart = std::chrono::steady_clock::now();

// The log's line on the parameter servers, or nothing in allreduce mode.
std::string servers_line(const Config& config, const std::optional<ServerTopology>& servers) {
  if (!servers) return "";
  const ParameterServerConfig& ps = config.parameter_server;
  return str("\nparameter servers: ", ps.servers, " per model position, ", ps.placement,
             servers->dedicated() ? " (ranks of their own after the workers)"
                                  : str(" (dp ranks 0..", ps.servers - 1, " serve too)"),
             ps.staleness == 0 ? std::string(", synchronous")
                               : str(", asynchronous (staleness ", ps.staleness, ", apply ",
                                     applies_each_push(config) ? "push" : "step", ")"),
             "; ", servers->workers(), " workers per position push to them");
}

// What each rank is, for the heartbeat's messages, under parameter servers; and the world ranks
// whose loss the job survives: an asynchronous parameter server's workers other than worker 0
// (it hosts the heartbeat's watcher and writes the checkpoints and logs), where a worker is one
// rank (tp = pp = cp = 1), its servers are ranks of their own, and MPI can make a communicator of
// the others alone (docs/parameter_server.md, "A lost worker").
HeartbeatRoles heartbeat_roles(const Config& config, const std::optional<ServerTopology>& servers,
                               Backend backend, int world_size) {
  HeartbeatRoles roles;
  if (!servers) return roles;
  const int positions =
      static_cast<int>(config.parallel.tensor * config.parallel.pipeline * config.parallel.context);
  const int workers = servers->workers() * positions;  // the world's first ranks when dedicated
  for (int r = 0; r < world_size; ++r) {
    if (!servers->dedicated()) {  // at one position the first K dp ranks (= world ranks) serve
      roles.names.push_back(positions > 1            ? std::string("worker")
                            : r < servers->servers() ? str("worker ", r, ", parameter server ", r)
                                                     : str("worker ", r));
    } else if (r < workers) {
      roles.names.push_back(positions == 1 ? str("worker ", r) : "worker");
    } else {
      const int s = (r - workers) / positions;
      roles.names.push_back(str("parameter server ", s));
    }
  }
  // Dropping needs the heartbeat (it names the lost rank): comm.heartbeat_s > 0.
  if (servers->dedicated() && config.parameter_server.staleness > 0 && backend == Backend::kMpi &&
      positions == 1 && config.comm.heartbeat_s > 0 && world_size > 1) {
    for (int w = 1; w < servers->workers(); ++w) roles.droppable.push_back(w);
  }
  return roles;
}

// The end of a rank where ranks may have been dropped: the survivors meet over the heartbeat
// (an MPI barrier would wait for a dropped rank), and after a drop leave without MPI_Finalize.
void finish_after_drops(World& world, Heartbeat& heartbeat, double timeout_s) {
  const HeldProcesses held = heartbeat.finish_together(timeout_s);
  const bool dropped = !heartbeat_dropped_ranks().empty();
  heartbeat.stop();
  if (dropped) {
    world.leave_without_finalize();
  } else {
    world.communicator()->barrier();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  end_held_processes(held);
  if (!held.orphaned.empty()) {
    // Every survivor's work is done: the launcher ends the job, and with it those processes.
    std::vector<std::string> ranks;
    for (int r : held.orphaned) ranks.push_back(std::to_string(r));
    log::warn(str("no survivor can end the held process of dropped rank(s) ", join(ranks, ","),
                  " (none left on its host): the job is ended through the launcher; the run has "
                  "finished"));
    world.abort(1);
  }
}

}  // namespace

int run_train(const CliArgs& args, int* argc, char*** argv) {
  std::optional<RunPlan> plan;
  std::optional<Manifest> checkpoint;
  JobSteps steps;
  steps.prepare = [&](const LaunchEnv& launch) {
    plan = plan_run(resolve_auto_layout(load_config(args.config_path, args.overrides),
                                        launch.world_size, launch_nodes(launch), args.resume),
                    launch.world_size);
    check_layout_changes(plan->config, launch.world_size, plan->data.total_steps);
    const std::string resume = resolve_resume_spec(args.resume, plan->config);
    if (!resume.empty()) {
      // A checkpoint written after a scheduled layout change resumes on the layout then in
      // effect (relayout.steps), as the run that wrote it would have gone on.
      if (!plan->config.relayout.steps.empty()) {
        const int64_t step = open_checkpoint(resume, checkpoint_root(plan->config)).step;
        if (step >= plan->config.relayout.steps.front()) {
          plan = plan_run(layout_at(plan->config, launch.world_size, step), launch.world_size);
        }
      }
      // The freeze algorithm's layout travels in the checkpoint: a run that froze more layers
      // than the configuration says resumes with them frozen, on the layout AutoPipe chose.
      if (plan->config.freeze.every > 0) {
        const Manifest found = open_checkpoint(resume, checkpoint_root(plan->config));
        if (found.config.train.frozen_layers > plan->config.train.frozen_layers) {
          plan = plan_run(freeze_state_of(plan->config, found.config), launch.world_size);
        }
      }
      checkpoint = read_checkpoint(resume, plan->config);
    }
    return plan->config;
  };
  steps.claim_outputs = [&](const JobStart& start) {
    check_outputs_writable(start.config);
    check_run_dir_free(RunPaths(start.config.run.dir).lock());  // before anything is written
  };
  steps.stops_on_signal = true;
  steps.before_world = [&](const JobStart& start) {
    prepare_flight_records(RunPaths(start.config.run.dir), start.launch.rank,
                           start.launch.world_size);
  };
  steps.run = [&](World& world, const JobStart& start, const ThreadChoice& threads,
                  RankTable& ranks) {
    const Config& config = plan->config;
    const LaunchEnv& launch = start.launch;
    const RunPaths paths(config.run.dir);
    // ddp.mode: parameter_server: the servers are placed before the workers' groups are made
    // (dedicated ones are ranks of their own, outside the workers' context).
    std::optional<ServerTopology> servers;
    std::shared_ptr<Communicator> workers = world.communicator();
    if (config.ddp.mode == DpMode::kParameterServer) {
      servers.emplace(world.communicator(), plan->layout,
                      static_cast<int>(config.parameter_server.servers),
                      config.parameter_server.placement);
      workers = servers->worker_world();
    }
    if (servers && !servers->trains()) {
      log::set_prefix(servers->prefix());
      log::set_is_root(false);
      ranks = gather_rank_table(*world.communicator());
      const HeartbeatRoles roles =
          heartbeat_roles(config, servers, world.backend(), world.communicator()->size());
      // Held if killed, so that the heartbeat (not the launcher) ends the job, naming it.
      if (!roles.droppable.empty()) ask_supervisor_to_hold();
      Heartbeat heartbeat(*world.communicator(), ranks,
                          static_cast<double>(config.comm.heartbeat_s), roles);
      run_parameter_server(config, *servers);
      if (!roles.droppable.empty()) {
        finish_after_drops(world, heartbeat, Communicator::timeout());
        return;
      }
      heartbeat.stop();
      world.communicator()->barrier();
      return;
    }
    ParallelContext context(workers, plan->layout, local_node_key(launch.node_index),
                            config.ddp.hierarchical);
    std::optional<ServerClient> client;
    std::optional<ParameterServer> colocated;
    if (servers) {
      client.emplace(*servers);
      client->set_asynchronous(config.parameter_server.staleness > 0, applies_each_push(config));
      if (servers->serves()) {
        colocated.emplace(config.train, *servers);
        client->set_local_server([&] { colocated->serve_round(); });
      }
      context.set_parameter_servers(&*client);
    }
    log::set_prefix(context.prefix());
    log::set_is_root(context.rank() == 0);
    log::info(str("launch: ", launch.describe(), ", backend ", world.backend(), ", ",
                  torch::get_num_threads(), " compute thread(s) per rank (", threads.source,
                  "), BLAS ", blas_description()));
    if (threads.oversubscribed && launch.local_rank == 0) log::warn(threads.warning);
    if (MixedPrecision(config).bf16_compute()) log::info(bf16_choice().why);
    log::info(context.table() + context.dp_choice() + servers_line(config, servers) +
              "\nresolved configuration:\n" + to_yaml(config));
    if (const std::string warning = context.tp_span_warning(); !warning.empty()) {
      log::warn(warning);
    }
    // Every rank tested the lock before the world formed; now rank 0 holds it to the end.
    const RunDirLock run_dir_lock = context.rank() == 0 ? RunDirLock(paths.lock()) : RunDirLock();
    write_resolved_config(config, paths, context.rank());
    ranks = gather_rank_table(*world.communicator());
    if (paths.enabled() && context.rank() == 0) write_rank_table(ranks, paths.rank_table());
    const HeartbeatRoles roles =
        heartbeat_roles(config, servers, world.backend(), world.communicator()->size());
    // A dropped worker's process is held by its supervisor until the others finish (any other
    // killed rank too: the heartbeat then ends the job, naming it).
    if (!roles.droppable.empty()) ask_supervisor_to_hold();
    Heartbeat heartbeat(*world.communicator(), ranks, static_cast<double>(config.comm.heartbeat_s),
                        roles);
    Training training(*plan, context, kProcessStart, launch.local_rank == 0);
    if (checkpoint) training.resume_from(*checkpoint);
    training.run();
    if (client) client->stop();  // the servers leave their loop
    if (!roles.droppable.empty()) {
      finish_after_drops(world, heartbeat, Communicator::timeout());
      return;
    }
    // The goodbyes before the last barrier: ranks leave it together, and MPI_Finalize across
    // nodes (UCX over TCP) hangs when some ranks reach it seconds before the others.
    heartbeat.stop();
    world.communicator()->barrier();
  };
  return run_job(steps, argc, argv);
}

}  // namespace triax
