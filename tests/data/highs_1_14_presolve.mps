* Source:     Pyomo MPS Writer
* Format:     Free MPS
*
NAME dtplan
OBJSENSE
 MIN
ROWS
 N  objective
 E  c_e_choice(1)_
 E  c_e_choice(2)_
 E  c_e_choice(3)_
 E  c_e_choice(4)_
 L  c_u_bracket(1)_
 L  c_u_bracket(2)_
 L  c_u_bracket(3)_
 L  c_u_bracket(4)_
 L  c_u_bracket(5)_
 L  c_u_bracket(6)_
 L  c_u_logarithm(1)_
 L  c_u_logarithm(2)_
 L  c_u_logarithm(3)_
 L  c_u_logarithm(4)_
 L  c_u_logarithm(5)_
 L  c_u_logarithm(6)_
 L  c_u_logarithm(7)_
 L  c_u_logarithm(8)_
 L  c_u_logarithm(9)_
 L  c_u_logarithm(10)_
 L  c_u_logarithm(11)_
 L  c_u_logarithm(12)_
 L  c_u_logarithm(13)_
 L  c_u_logarithm(14)_
 L  c_u_structure(1)_
 L  c_u_node_limit(1)_
 L  c_u_sync_overlap(1)_
 L  c_u_sync_overlap(2)_
 L  c_u_efficiency(0_0_0)_
 L  c_u_efficiency(0_1_0)_
 L  c_u_time_to_target(1)_
 L  c_u_time_to_target(2)_
 L  c_u_duration_limit(1)_
 L  c_u_incumbent(1)_
 L  c_u_nodes_used(1)_
 L  c_u_nodes_used(2)_
 E  c_e_pool_key(1)_
 E  c_e_pool_key(2)_
 E  c_e_pool_key(3)_
 E  c_e_pool_key(4)_
 E  c_e_pool_key(5)_
 E  c_e_pool_key(6)_
 L  c_u_pool_count(1)_
 L  c_u_pool_count(2)_
 L  c_u_pool_count(3)_
 L  c_u_pool_count(4)_
 L  c_u_pool_count(5)_
 L  c_u_pool_count(6)_
 L  c_u_pool_count(7)_
 L  c_u_pool_count(8)_
 E  c_e_pool_total(1)_
 L  c_u_pool_allowed(1)_
 L  c_u_pool_allowed(2)_
 L  c_u_pool_allowed(3)_
 L  c_u_pool_allowed(4)_
 L  c_u_pool_required(1)_
 L  c_u_pool_required(2)_
 L  c_u_pool_required(3)_
 L  c_u_pool_required(4)_
 L  c_u_pool_required(5)_
 L  c_u_pool_links(1)_
 L  c_u_pool_links(2)_
 L  c_u_pool_links(3)_
 L  c_u_pool_links(4)_
 L  c_u_pool_links(5)_
 L  c_u_pool_links(6)_
 L  c_u_pool_links(7)_
 L  c_u_pool_links(8)_
 L  c_u_pool_links(9)_
 L  c_u_pool_links(10)_
 L  c_u_pool_links(11)_
 L  c_u_pool_links(12)_
 L  c_u_pool_links(13)_
 L  c_u_pool_links(14)_
 L  c_u_pool_spread(1)_
 L  c_u_pool_spread(2)_
 E  c_e_pool_cost(1)_
 L  c_u_pool_budget(1)_
COLUMNS
     y(s4_flat_fp16_Cr100) c_e_choice(1)_ 1
     y(s4_flat_fp16_Cr100) c_u_sync_overlap(1)_ -2.9244972066855555
     y(s4_flat_fp16_Cr100) c_u_sync_overlap(2)_ 2.1088099297261058
     y(s4_flat_fp16_Cr100) c_u_time_to_target(1)_ 11.709276374775495
     y(s4_flat_fp16_Cr100) c_u_time_to_target(2)_ 8.143669436019465
     y(s4_flat_fp16_Cr100) c_u_nodes_used(1)_ 2
     y(s4_flat_fp16_Cr100) c_e_pool_key(5)_ -1
     y(s4_flat_fp16_Cr100) c_u_pool_spread(1)_ 4
     lam(s5_flat_fp8_Cr100_single) c_e_choice(1)_ 1
     lam(s5_flat_fp8_Cr100_single) c_u_structure(1)_ -1
     lam(s5_flat_fp8_Cr100_single) c_u_node_limit(1)_ 3
     lam(s5_flat_fp8_Cr100_single) c_u_time_to_target(1)_ 8.0356445564894674
     lam(s5_flat_fp8_Cr100_single) c_u_time_to_target(2)_ 8.0356445564894674
     lam(s5_flat_fp8_Cr100_single) c_u_nodes_used(2)_ 1
     lam(s5_flat_fp8_Cr100_single) c_e_pool_key(6)_ -1
     lam(s5_flat_fp8_Cr100_single) c_u_pool_spread(2)_ 4
     lam(s5_flat_fp8_Cr1_single) c_e_choice(1)_ 1
     lam(s5_flat_fp8_Cr1_single) c_u_structure(1)_ -1
     lam(s5_flat_fp8_Cr1_single) c_u_node_limit(1)_ 3
     lam(s5_flat_fp8_Cr1_single) c_u_time_to_target(1)_ 8.0356445564894674
     lam(s5_flat_fp8_Cr1_single) c_u_time_to_target(2)_ 8.0356445564894674
     lam(s5_flat_fp8_Cr1_single) c_u_nodes_used(2)_ 1
     lam(s5_flat_fp8_Cr1_single) c_e_pool_key(6)_ -1
     lam(s5_flat_fp8_Cr1_single) c_u_pool_spread(2)_ 4
     bn(0) c_e_choice(2)_ 1
     bn(0) c_u_bracket(1)_ 1
     bn(0) c_u_bracket(2)_ -1
     bn(0) c_u_efficiency(0_1_0)_ -0.10185352505417442
     bn(1) c_e_choice(2)_ 1
     bn(1) c_u_bracket(1)_ 2
     bn(1) c_u_bracket(2)_ -2
     bn(1) c_u_logarithm(1)_ -0.69314718055994529
     bn(1) c_u_sync_overlap(2)_ 0.01980262729617973
     n c_u_bracket(1)_ -1
     n c_u_bracket(2)_ 1
     n c_u_logarithm(2)_ -0.69314718055994529
     n c_u_logarithm(3)_ -0.4054651081081645
     n c_u_structure(1)_ -1
     n c_u_node_limit(1)_ 1
     n c_u_nodes_used(1)_ 1
     n c_u_pool_spread(1)_ -1
     ln_n c_u_logarithm(1)_ 1
     ln_n c_u_logarithm(2)_ 1
     ln_n c_u_logarithm(3)_ 1
     ln_n c_u_time_to_target(1)_ -1
     bH(0) c_e_choice(3)_ 1
     bH(0) c_u_bracket(3)_ 1
     bH(0) c_u_bracket(4)_ -1
     bH(1) c_e_choice(3)_ 1
     bH(1) c_u_bracket(3)_ 2
     bH(1) c_u_bracket(4)_ -3
     bH(1) c_u_logarithm(4)_ -1.0986122886681098
     bH(1) c_u_efficiency(0_0_0)_ 0.026457022323377734
     bH(1) c_u_efficiency(0_1_0)_ 0.052037448489471873
     bH(2) c_e_choice(3)_ 1
     bH(2) c_u_bracket(3)_ 4
     bH(2) c_u_bracket(4)_ -7
     bH(2) c_u_logarithm(4)_ -1.9459101490553132
     bH(2) c_u_efficiency(0_0_0)_ 0.05363308543602914
     bH(2) c_u_efficiency(0_1_0)_ 0.10471551272577838
     bH(3) c_e_choice(3)_ 1
     bH(3) c_u_bracket(3)_ 8
     bH(3) c_u_bracket(4)_ -15
     bH(3) c_u_logarithm(4)_ -2.7080502011022101
     bH(3) c_u_efficiency(0_0_0)_ 0.081568367568582309
     bH(3) c_u_efficiency(0_1_0)_ 0.15807496526204878
     bH(4) c_e_choice(3)_ 1
     bH(4) c_u_bracket(3)_ 16
     bH(4) c_u_bracket(4)_ -22
     bH(4) c_u_logarithm(4)_ -3.0910424533583161
     bH(4) c_u_efficiency(0_0_0)_ 0.11030651157167645
     bH(4) c_u_efficiency(0_1_0)_ 0.21216003662585087
     H c_u_bracket(3)_ -1
     H c_u_bracket(4)_ 1
     H c_u_logarithm(5)_ -0.69314718055994529
     H c_u_logarithm(6)_ -0.4054651081081645
     H c_u_logarithm(7)_ -0.28768207245178079
     H c_u_logarithm(8)_ -0.22314355131420971
     H c_u_logarithm(9)_ -0.13353139262452252
     H c_u_logarithm(10)_ -0.11778303565638382
     H c_u_logarithm(11)_ -0.064538521137571081
     H c_u_logarithm(12)_ -0.06062462181643502
     ln_H c_u_logarithm(4)_ 1
     ln_H c_u_logarithm(5)_ 1
     ln_H c_u_logarithm(6)_ 1
     ln_H c_u_logarithm(7)_ 1
     ln_H c_u_logarithm(8)_ 1
     ln_H c_u_logarithm(9)_ 1
     ln_H c_u_logarithm(10)_ 1
     ln_H c_u_logarithm(11)_ 1
     ln_H c_u_logarithm(12)_ 1
     ln_H c_u_sync_overlap(2)_ -1
     bR(0) c_e_choice(4)_ 1
     bR(0) c_u_bracket(5)_ 1
     bR(0) c_u_bracket(6)_ -1
     R c_u_bracket(5)_ -1
     R c_u_bracket(6)_ 1
     R c_u_logarithm(14)_ -0.69314718055994529
     ln_R c_u_logarithm(13)_ 1
     ln_R c_u_logarithm(14)_ 1
     z c_u_sync_overlap(1)_ -1
     z c_u_sync_overlap(2)_ -1
     z c_u_time_to_target(1)_ 1
     zeta c_u_sync_overlap(1)_ 1
     omega c_u_efficiency(0_0_0)_ 1
     omega c_u_efficiency(0_1_0)_ 1
     omega c_u_time_to_target(1)_ -1
     L objective 1
     L c_u_time_to_target(1)_ -1
     L c_u_time_to_target(2)_ -1
     L c_u_duration_limit(1)_ 1
     L c_u_incumbent(1)_ 1
     nodes c_u_nodes_used(1)_ -1
     nodes c_u_nodes_used(2)_ -1
     nodes c_e_pool_total(1)_ -1
     use(p0) c_u_pool_count(1)_ 1
     use(p0) c_u_pool_count(2)_ -1
     use(p0) c_u_pool_allowed(1)_ 1
     use(p0) c_u_pool_required(1)_ -1
     use(p0) c_u_pool_links(1)_ 1
     use(p0) c_u_pool_links(3)_ -1
     use(p0) c_u_pool_spread(1)_ 1
     use(p0) c_u_pool_spread(2)_ 1
     use(p1) c_u_pool_count(3)_ 1
     use(p1) c_u_pool_count(4)_ -1
     use(p1) c_u_pool_allowed(2)_ 1
     use(p1) c_u_pool_required(2)_ -1
     use(p1) c_u_pool_required(5)_ -1
     use(p1) c_u_pool_links(2)_ 1
     use(p1) c_u_pool_links(3)_ -1
     use(p1) c_u_pool_spread(1)_ 1
     use(p1) c_u_pool_spread(2)_ 1
     use(p2) c_u_pool_count(5)_ 1
     use(p2) c_u_pool_count(6)_ -1
     use(p2) c_u_pool_allowed(3)_ 1
     use(p2) c_u_pool_required(3)_ -1
     use(p2) c_u_pool_links(4)_ 1
     use(p2) c_u_pool_links(6)_ -1
     use(p2) c_u_pool_spread(1)_ 1
     use(p2) c_u_pool_spread(2)_ 1
     use(p3) c_u_pool_count(7)_ 1
     use(p3) c_u_pool_count(8)_ -1
     use(p3) c_u_pool_allowed(4)_ 1
     use(p3) c_u_pool_required(4)_ -1
     use(p3) c_u_pool_links(5)_ 1
     use(p3) c_u_pool_links(6)_ -1
     use(p3) c_u_pool_spread(1)_ 1
     use(p3) c_u_pool_spread(2)_ 1
     cnt(p0) c_u_pool_count(1)_ -1
     cnt(p0) c_u_pool_count(2)_ 1
     cnt(p0) c_e_pool_total(1)_ 1
     cnt(p0) c_e_pool_cost(1)_ -0.014285714285714285
     cnt(p1) c_u_pool_count(3)_ -1
     cnt(p1) c_u_pool_count(4)_ 1
     cnt(p1) c_e_pool_total(1)_ 1
     cnt(p1) c_e_pool_cost(1)_ -1
     cnt(p2) c_u_pool_count(5)_ -1
     cnt(p2) c_u_pool_count(6)_ 1
     cnt(p2) c_e_pool_total(1)_ 1
     cnt(p2) c_e_pool_cost(1)_ -0.36734693877551022
     cnt(p3) c_u_pool_count(7)_ -1
     cnt(p3) c_u_pool_count(8)_ 1
     cnt(p3) c_e_pool_total(1)_ 1
     cnt(p3) c_e_pool_cost(1)_ -0.024489795918367346
     x(fp16_p0_m217p197GB_L0) c_e_pool_key(1)_ 1
     x(fp16_p0_m217p197GB_L0) c_u_pool_required(1)_ 1
     x(fp16_p0_m217p197GB_L0) c_u_pool_links(9)_ 1
     x(fp16_p0_m217p197GB_L0) c_u_pool_links(10)_ 1
     x(fp16_p0_m217p197GB_L0) c_u_pool_links(13)_ 1
     x(fp16_p0_m217p197GB_L0) c_u_pool_links(14)_ 1
     x(fp16_p0_m217p197GB_L1) c_e_pool_key(2)_ 1
     x(fp16_p0_m217p197GB_L1) c_u_pool_required(1)_ 1
     x(fp16_p0_m217p197GB_L1) c_u_pool_links(11)_ 1
     x(fp16_p0_m217p197GB_L1) c_u_pool_links(12)_ 1
     x(fp16_p0_m217p197GB_L1) c_u_pool_links(13)_ 1
     x(fp16_p1_m3136GB_L0) c_e_pool_key(3)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_allowed(1)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_allowed(3)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_allowed(4)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_required(2)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_links(9)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_links(10)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_links(13)_ 1
     x(fp16_p1_m3136GB_L0) c_u_pool_links(14)_ 1
     x(fp16_p2_m3136GB_L1) c_e_pool_key(4)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_allowed(1)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_required(3)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_required(5)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_links(11)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_links(12)_ 1
     x(fp16_p2_m3136GB_L1) c_u_pool_links(13)_ 1
     x(fp16_p2_m3840GB_L2) c_e_pool_key(5)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_allowed(1)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_allowed(2)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_required(3)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_links(10)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_links(12)_ 1
     x(fp16_p2_m3840GB_L2) c_u_pool_links(13)_ 1
     x(fp16_p3_m3136GB_L1) c_e_pool_key(4)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_allowed(1)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_allowed(3)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_required(4)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_required(5)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_links(11)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_links(12)_ 1
     x(fp16_p3_m3136GB_L1) c_u_pool_links(13)_ 1
     x(fp16_p3_m3840GB_L2) c_e_pool_key(5)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_allowed(1)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_allowed(2)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_allowed(3)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_required(4)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_links(10)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_links(12)_ 1
     x(fp16_p3_m3840GB_L2) c_u_pool_links(13)_ 1
     x(fp8_p1_m3136GB_L0) c_e_pool_key(6)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_allowed(1)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_allowed(3)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_allowed(4)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_required(2)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_links(9)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_links(10)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_links(13)_ 1
     x(fp8_p1_m3136GB_L0) c_u_pool_links(14)_ 1
     cost c_e_pool_cost(1)_ 1
     cost c_u_pool_budget(1)_ 1
     site(LosAngeles) c_u_pool_links(1)_ -1
     site(LosAngeles) c_u_pool_links(2)_ -1
     site(LosAngeles) c_u_pool_links(3)_ 1
     site(LosAngeles) c_u_pool_links(7)_ -1
     site(LosAngeles) c_u_pool_links(10)_ 1
     site(LosAngeles) c_u_pool_links(13)_ -1
     site(LosAngeles) c_u_pool_links(14)_ 1
     site(Singapore) c_u_pool_links(4)_ -1
     site(Singapore) c_u_pool_links(5)_ -1
     site(Singapore) c_u_pool_links(6)_ 1
     site(Singapore) c_u_pool_links(8)_ -1
     site(Singapore) c_u_pool_links(9)_ 1
     site(Singapore) c_u_pool_links(10)_ 1
     site(Singapore) c_u_pool_links(12)_ -1
     site(Singapore) c_u_pool_links(13)_ -1
     site(Singapore) c_u_pool_links(14)_ 1
     pair(LosAngeles__Singapore) c_u_pool_links(7)_ 1
     pair(LosAngeles__Singapore) c_u_pool_links(8)_ 1
     pair(LosAngeles__Singapore) c_u_pool_links(11)_ -1
     pair(LosAngeles__Singapore) c_u_pool_links(12)_ -1
     pair(LosAngeles__Singapore) c_u_pool_links(13)_ -1
RHS
     RHS c_e_choice(1)_ 1
     RHS c_e_choice(2)_ 1
     RHS c_e_choice(3)_ 1
     RHS c_e_choice(4)_ 1
     RHS c_u_bracket(1)_ 0
     RHS c_u_bracket(2)_ 0
     RHS c_u_bracket(3)_ 0
     RHS c_u_bracket(4)_ 0
     RHS c_u_bracket(5)_ 0
     RHS c_u_bracket(6)_ 0
     RHS c_u_logarithm(1)_ 0
     RHS c_u_logarithm(2)_ -0.69314718055994529
     RHS c_u_logarithm(3)_ -0.11778303565638371
     RHS c_u_logarithm(4)_ 0
     RHS c_u_logarithm(5)_ -0.69314718055994529
     RHS c_u_logarithm(6)_ -0.11778303565638371
     RHS c_u_logarithm(7)_ 0.23556607131276741
     RHS c_u_logarithm(8)_ 0.49372015586305174
     RHS c_u_logarithm(9)_ 1.0111904006836556
     RHS c_u_logarithm(10)_ 1.1371772564287652
     RHS c_u_logarithm(11)_ 1.7399723840386438
     RHS c_u_logarithm(12)_ 1.8025947731768208
     RHS c_u_logarithm(13)_ 0
     RHS c_u_logarithm(14)_ -0.69314718055994529
     RHS c_u_structure(1)_ -2
     RHS c_u_node_limit(1)_ 4
     RHS c_u_sync_overlap(1)_ 0
     RHS c_u_sync_overlap(2)_ 4.9442998339817352
     RHS c_u_efficiency(0_0_0)_ 0
     RHS c_u_efficiency(0_1_0)_ 0
     RHS c_u_time_to_target(1)_ 0
     RHS c_u_time_to_target(2)_ 0
     RHS c_u_duration_limit(1)_ 16.049433006800268
     RHS c_u_incumbent(1)_ 8.1436694350194649
     RHS c_u_nodes_used(1)_ 2
     RHS c_u_nodes_used(2)_ 0
     RHS c_e_pool_key(1)_ 0
     RHS c_e_pool_key(2)_ 0
     RHS c_e_pool_key(3)_ 0
     RHS c_e_pool_key(4)_ 0
     RHS c_e_pool_key(5)_ 0
     RHS c_e_pool_key(6)_ 0
     RHS c_u_pool_count(1)_ 0
     RHS c_u_pool_count(2)_ 0
     RHS c_u_pool_count(3)_ 0
     RHS c_u_pool_count(4)_ 0
     RHS c_u_pool_count(5)_ 0
     RHS c_u_pool_count(6)_ 0
     RHS c_u_pool_count(7)_ 0
     RHS c_u_pool_count(8)_ 0
     RHS c_e_pool_total(1)_ 0
     RHS c_u_pool_allowed(1)_ 1
     RHS c_u_pool_allowed(2)_ 1
     RHS c_u_pool_allowed(3)_ 1
     RHS c_u_pool_allowed(4)_ 1
     RHS c_u_pool_required(1)_ 0
     RHS c_u_pool_required(2)_ 0
     RHS c_u_pool_required(3)_ 0
     RHS c_u_pool_required(4)_ 0
     RHS c_u_pool_required(5)_ 0
     RHS c_u_pool_links(1)_ 0
     RHS c_u_pool_links(2)_ 0
     RHS c_u_pool_links(3)_ 0
     RHS c_u_pool_links(4)_ 0
     RHS c_u_pool_links(5)_ 0
     RHS c_u_pool_links(6)_ 0
     RHS c_u_pool_links(7)_ 0
     RHS c_u_pool_links(8)_ 0
     RHS c_u_pool_links(9)_ 1
     RHS c_u_pool_links(10)_ 2
     RHS c_u_pool_links(11)_ 0
     RHS c_u_pool_links(12)_ 0
     RHS c_u_pool_links(13)_ 0
     RHS c_u_pool_links(14)_ 2
     RHS c_u_pool_spread(1)_ 4
     RHS c_u_pool_spread(2)_ 5
     RHS c_e_pool_cost(1)_ 0
     RHS c_u_pool_budget(1)_ 1.3779595432694878
BOUNDS
 BV BOUND y(s4_flat_fp16_Cr100)
 BV BOUND lam(s5_flat_fp8_Cr100_single)
 BV BOUND lam(s5_flat_fp8_Cr1_single)
 BV BOUND bn(0)
 BV BOUND bn(1)
 LI BOUND n 1
 UI BOUND n 2
 LO BOUND ln_n 0
 UP BOUND ln_n 0.69314718055994529
 BV BOUND bH(0)
 BV BOUND bH(1)
 BV BOUND bH(2)
 BV BOUND bH(3)
 BV BOUND bH(4)
 LI BOUND H 1
 UI BOUND H 22
 LO BOUND ln_H 0
 UP BOUND ln_H 3.0910424533583161
 BV BOUND bR(0)
 LI BOUND R 1
 UI BOUND R 1
 LO BOUND ln_R 0
 UP BOUND ln_R 0
 LO BOUND z -3.9244972066855555
 LO BOUND zeta 0
 LO BOUND omega -50
 UP BOUND omega 0
 FR BOUND L
 LI BOUND nodes 1
 UI BOUND nodes 4
 BV BOUND use(p0)
 BV BOUND use(p1)
 BV BOUND use(p2)
 BV BOUND use(p3)
 LI BOUND cnt(p0) 0
 UI BOUND cnt(p0) 1
 LI BOUND cnt(p1) 0
 UI BOUND cnt(p1) 1
 LI BOUND cnt(p2) 0
 UI BOUND cnt(p2) 1
 LI BOUND cnt(p3) 0
 UI BOUND cnt(p3) 1
 BV BOUND x(fp16_p0_m217p197GB_L0)
 BV BOUND x(fp16_p0_m217p197GB_L1)
 BV BOUND x(fp16_p1_m3136GB_L0)
 BV BOUND x(fp16_p2_m3136GB_L1)
 BV BOUND x(fp16_p2_m3840GB_L2)
 BV BOUND x(fp16_p3_m3136GB_L1)
 BV BOUND x(fp16_p3_m3840GB_L2)
 BV BOUND x(fp8_p1_m3136GB_L0)
 LO BOUND cost 0
 LO BOUND site(LosAngeles) 0
 UP BOUND site(LosAngeles) 1
 LO BOUND site(Singapore) 0
 UP BOUND site(Singapore) 1
 LO BOUND pair(LosAngeles__Singapore) 0
 UP BOUND pair(LosAngeles__Singapore) 1
ENDATA
