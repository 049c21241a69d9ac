/* How late a thread that sleeps wakes up on this machine: the floor under the packet link's
 * added delay (a benchmark, not a test: it prints figures; nothing checks them).
 *
 * 200 sleeps of 5 ms each through a relative ppoll timeout, clock_nanosleep with an absolute
 * deadline (TIMER_ABSTIME) and a timerfd armed at an absolute deadline (TFD_TIMER_ABSTIME)
 * and polled, as the link thread does; then 200 cross-thread wake-ups through an eventfd (the
 * shape of a TUN device becoming readable). Timer slack is set to 1 ns; with the argument 1
 * the thread asks for SCHED_FIFO priority 1, as the link thread does (needs root).
 *
 *   cc -O2 -o timer-wakeup bench/timer-wakeup.c -lpthread && ./timer-wakeup 1
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#define N 200
static long long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){long long x=*(long long*)a,y=*(long long*)b;return x<y?-1:x>y;}
static void report(const char*n,long long*v){qsort(v,N,sizeof*v,cmp);printf("%-34s min %6.1f  p10 %6.1f  median %6.1f  p90 %6.1f us\n",n,v[0]/1e3,v[N/10]/1e3,v[N/2]/1e3,v[N*9/10]/1e3);}
static void rt(int fifo){prctl(PR_SET_TIMERSLACK,1UL);if(fifo){struct sched_param p={.sched_priority=1};sched_setscheduler(0,SCHED_FIFO,&p);}}
static int efd; static volatile long long sent;
static void* waker(void*a){(void)a;for(int i=0;i<N;i++){struct timespec d={0,1000000};nanosleep(&d,0);sent=now();uint64_t one=1;write(efd,&one,8);}return 0;}
int main(int argc,char**argv){
  int fifo=argc>1&&atoi(argv[1]);rt(fifo);
  long long v[N]; long long delay=5000000;
  for(int i=0;i<N;i++){long long t0=now();struct timespec ts={0,delay};ppoll(0,0,&ts,0);v[i]=now()-t0-delay;} report("ppoll relative 5ms overshoot",v);
  for(int i=0;i<N;i++){struct timespec d;clock_gettime(CLOCK_MONOTONIC,&d);long long t=d.tv_sec*1000000000LL+d.tv_nsec+delay;d.tv_sec=t/1000000000;d.tv_nsec=t%1000000000;clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&d,0);v[i]=now()-t;} report("clock_nanosleep ABSTIME 5ms",v);
  int tfd=timerfd_create(CLOCK_MONOTONIC,0);
  for(int i=0;i<N;i++){long long t=now()+delay;struct itimerspec it={{0,0},{t/1000000000,t%1000000000}};timerfd_settime(tfd,TFD_TIMER_ABSTIME,&it,0);struct pollfd p={tfd,POLLIN,0};ppoll(&p,1,0,0);v[i]=now()-t;uint64_t x;read(tfd,&x,8);} report("timerfd ABSTIME + ppoll 5ms",v);
  efd=eventfd(0,0);pthread_t th;pthread_create(&th,0,waker,0);
  for(int i=0;i<N;i++){struct pollfd p={efd,POLLIN,0};ppoll(&p,1,0,0);v[i]=now()-sent;uint64_t x;read(efd,&x,8);} pthread_join(th,0); report("eventfd cross-thread wake",v);
  return 0;}
