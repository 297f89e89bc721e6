# A Ruby program of known shape for tests/integration/test_ruby.sh (docs/ruby.md):
#   <main> -> main -> Worker#outer -> Worker#hot_a / Worker#hot_b
# hot_a does twice hot_b's loop iterations, so about 2/3 of the time. It measures
# its own truth: the thread CPU time (CLOCK_THREAD_CPUTIME_ID) around each hot
# call, added per round (one store: a report holds whole rounds).
# Prints its pid, then "ready"; on SIGUSR1 prints "cpu HOT_A_NS HOT_B_NS" (totals
# so far); at the end (after SECONDS of CPU time with "cpu", else wall time) the
# same line.
# Usage: ruby rbhot.rb SECONDS [cpu]

class Worker
  def initialize
    @cpu = [0, 0]
  end

  attr_reader :cpu

  def clock
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)
  end

  def hot_a
    x = 0
    i = 0
    while i < 20_000
      x += i * i
      i += 1
    end
    x
  end

  def hot_b
    x = 0
    i = 0
    while i < 10_000
      # no C method call in the loop (Integer#^ is one; + is an instruction):
      # with one, hearth read hot_a 1-2 points above these clocks (docs/ruby.md)
      x += i + 7
      i += 1
    end
    x
  end

  def outer(secs, by_cpu)
    start = by_cpu ? clock : Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
    deadline = start + (secs * 1e9).to_i
    while true
      # the clock read inline, not through #clock: less of its cost in the truth
      t0 = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)
      hot_a
      t1 = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)
      hot_b
      t2 = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)
      @cpu = [@cpu[0] + t1 - t0, @cpu[1] + t2 - t1]
      now = by_cpu ? t2 : Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
      break if now >= deadline
    end
  end
end

def main
  secs = (ARGV[0] || "5").to_f
  by_cpu = ARGV[1] == "cpu"
  w = Worker.new
  $stdout.sync = true
  Signal.trap("USR1") { puts "cpu #{w.cpu[0]} #{w.cpu[1]}" }
  puts Process.pid
  puts "ready"
  w.outer(secs, by_cpu)
  puts "cpu #{w.cpu[0]} #{w.cpu[1]}"
end

main
