# A Ruby program of known shape for tests/integration/test_ruby.sh:
# main -> outer -> (hot_a, hot_b), hot_a given about twice hot_b's work.
# It measures its own thread CPU time in each hot method and prints the totals
# (seconds) at exit, as "rbhot hot_a=S hot_b=S".
# Usage: ruby rbhot.rb SECONDS

class Worker
  def initialize
    @a = 0.0
    @b = 0.0
  end

  attr_reader :a, :b

  def clock
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
  end

  def hot_a
    t = clock
    x = 0
    i = 0
    while i < 40_000
      x += i * i
      i += 1
    end
    @a += clock - t
    x
  end

  def hot_b
    t = clock
    x = 0
    i = 0
    while i < 20_000
      x += i ^ 7
      i += 1
    end
    @b += clock - t
    x
  end

  def outer(deadline)
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      hot_a
      hot_b
    end
  end
end

def main
  secs = (ARGV[0] || "5").to_f
  w = Worker.new
  $stdout.sync = true
  puts "rbhot ready #{Process.pid}"
  w.outer(Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs)
  puts format("rbhot hot_a=%.6f hot_b=%.6f", w.a, w.b)
end

main
